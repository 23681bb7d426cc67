package deploy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// A stream over a glob of three files is three partitions: its scan runs
// as three instances spread over the tier's two workers in turn, the
// filter stays with each (pipelined), and the keyed aggregation exchanges
// by its group column over the workers of the next tier.
func TestPlacePartitionedStream(t *testing.T) {
	dir := t.TempDir()
	for k := 0; k < 3; k++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("r-%d.csv", k)), []byte("sensor,ts,temperature\n1,2026-01-01 00:00:00,21\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := deploy.Script{Filename: "p.sql", BaseDir: dir, Source: `
CREATE STREAM readings (sensor INT, ts TIMESTAMP, temperature DOUBLE) FROM FILE 'r-*.csv' FORMAT CSV;
SELECT sensor, count(*) AS n FROM readings WHERE temperature > 20 GROUP BY sensor, TUMBLE(ts, INTERVAL '10' SECOND);
`}
	q, plan, err := s.Build(nil, exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws := []deploy.Worker{{Name: "e1", Tier: "edge"}, {Name: "e2", Tier: "edge"}, {Name: "h1", Tier: "hub"}, {Name: "h2", Tier: "hub"}}
	p, err := deploy.Place("q1", q.Graph(), plan, ws, deploy.Options{Tiers: []string{"edge", "hub"}})
	if err != nil {
		t.Fatal(err)
	}
	desc := p.Describe()
	for _, want := range []string{"scan readings @edge e1,e2,e1", "filter @edge e1,e2,e1", "aggregate @hub h1,h2", "exchange keys=[0]"} {
		if !strings.Contains(desc, want) {
			t.Errorf("placement lacks %q:\n%s", want, desc)
		}
	}
	if err := p.Apply(q.Graph()); err != nil {
		t.Fatal(err)
	}
}
