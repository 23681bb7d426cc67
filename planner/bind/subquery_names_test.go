package bind_test

import (
	"strings"
	"testing"

	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
)

// A correlated subquery in the SELECT list, unnested into a join, is named
// as written, not by the rewrite's internal columns ($v, $n).
func TestCorrelatedSubqueryColumnNames(t *testing.T) {
	cat, err := catalog.LoadFile("testdata/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := bindOne(t, bind.New(cat), `SELECT s.sensor,
		(SELECT count(*) FROM sensors t WHERE t.sensor < s.sensor),
		EXISTS (SELECT 1 FROM sensors t WHERE t.site = s.site AND t.sensor <> s.sensor),
		(SELECT max(t.sensor) FROM sensors t WHERE t.site = s.site) AS m
		FROM sensors s`)
	want := []string{"sensor", "(SELECT count(*) FROM sensors AS t WHERE t.sensor < s.sensor)",
		"EXISTS (SELECT 1 FROM sensors AS t WHERE t.site = s.site AND t.sensor <> s.sensor)", "m"}
	f := p.Root.Schema().Fields()
	if len(f) != len(want) {
		t.Fatalf("%d columns, want %d", len(f), len(want))
	}
	for i, w := range want {
		if f[i].Name != w || strings.Contains(f[i].Name, "$") {
			t.Errorf("column %d: %q, want %q", i+1, f[i].Name, w)
		}
	}
}
