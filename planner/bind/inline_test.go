package bind_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/logical"
)

// doubling is n WITHs, one a line, each reading the one before twice, and
// a query of the last: 2^(n-1) copies of the first in n+1 lines.
func doubling(n int) string {
	var b strings.Builder
	b.WriteString("WITH c0 AS (SELECT sensor FROM sensors)")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, ",\nc%d AS (SELECT sensor FROM c%d UNION ALL SELECT sensor FROM c%d)", i, i-1, i-1)
	}
	fmt.Fprintf(&b, "\nSELECT sensor FROM c%d", n-1)
	return b.String()
}

func scans(n logical.Node) int {
	k := 0
	logical.Walk(n, func(x logical.Node) bool {
		if _, ok := x.(*logical.Scan); ok {
			k++
		}
		return true
	})
	return k
}

// A reference to a WITH name or a view binds its query anew, so references
// to references multiply; the plan they make is bounded as a script's size
// is (bind.MaxInlined). Forty lines of WITH asked for 2^39 copies and took
// the binder (on a cluster, the coordinator) past 4 GB; now the query's own
// reference is the error, at its line and column, and what stays under the
// bound binds as before, every copy in the plan.
func TestReferencesMultiplyWithinABound(t *testing.T) {
	cat, err := catalog.LoadFile("testdata/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := bindOne(t, bind.New(cat), doubling(10))
	if got := scans(p.Root); got != 512 {
		t.Fatalf("10 doubling WITHs read sensors %d times, want 512", got)
	}
	// A WITH read many times side by side: well under the bound.
	wide := "WITH c AS (SELECT sensor FROM sensors) SELECT sensor FROM c" + strings.Repeat(" UNION ALL SELECT sensor FROM c", 999)
	if got := scans(bindOne(t, bind.New(cat), wide).Root); got != 1000 {
		t.Fatalf("a WITH read 1,000 times is %d scans", got)
	}

	st, err := lang.ParseStatement("q.sql", doubling(40))
	if err != nil {
		t.Fatal(err)
	}
	_, err = bind.New(cat).Bind(st)
	var be *bind.Error
	if !errors.As(err, &be) {
		t.Fatalf("40 doubling WITHs: %v, want a bind error", err)
	}
	if be.Pos.Line != 41 || be.Pos.Col != 20 || !strings.Contains(be.Msg, "WITH c39") || !strings.Contains(be.Msg, fmt.Sprint(bind.MaxInlined)) {
		t.Errorf("40 doubling WITHs: %v, want the error at the query's FROM c39 (q.sql:41:20) naming it and the bound", err)
	}
	if n := strings.Count(err.Error(), "q.sql:"); n != 1 {
		t.Errorf("%d errors, want one: %v", n, err)
	}
}

// Views multiply as WITHs do: the CREATE VIEW past the bound is refused at
// its reference, and every view created before it stays.
func TestViewsMultiplyWithinABound(t *testing.T) {
	cat, err := catalog.LoadFile("testdata/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := apply(t, cat, "CREATE VIEW v0 AS SELECT sensor FROM sensors"); err != nil {
		t.Fatal(err)
	}
	refused := -1
	for i := 1; i < 40 && refused < 0; i++ {
		err := apply(t, cat, fmt.Sprintf("CREATE VIEW v%d AS SELECT sensor FROM v%d UNION ALL SELECT sensor FROM v%d", i, i-1, i-1))
		if err == nil {
			continue
		}
		refused = i
		if !strings.Contains(err.Error(), fmt.Sprintf("view v%d makes the plan larger than %d operators", i-1, bind.MaxInlined)) {
			t.Fatalf("CREATE VIEW v%d: %v, want refused for the bound", i, err)
		}
	}
	if refused < 0 {
		t.Fatal("40 doubling views were all created")
	}
	for i := range refused {
		if cat.View(fmt.Sprintf("v%d", i)) == nil {
			t.Errorf("v%d was lost", i)
		}
	}
	// The last view created is within the bound and the one refused, twice
	// it, is past it: refused where its plan passes, not before.
	p := bindOne(t, bind.New(cat), fmt.Sprintf("SELECT sensor FROM v%d", refused-1))
	if got := scans(p.Root); got != 1<<(refused-1) {
		t.Errorf("v%d reads sensors %d times, want %d", refused-1, got, 1<<(refused-1))
	}
	ops := 0
	logical.Walk(p.Root, func(logical.Node) bool { ops++; return true })
	if ops > bind.MaxInlined || 2*ops < bind.MaxInlined {
		t.Errorf("v%d (%d operators) was created and v%d refused, want the refusal where the plan passes %d", refused-1, ops, refused, bind.MaxInlined)
	}
}
