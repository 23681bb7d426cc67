package lang

import (
	"strings"
	"testing"
)

func TestInspectVisitsInSourceOrder(t *testing.T) {
	s, err := Parse("q", "SELECT f(a) + 1 AS x FROM t CROSS JOIN LATERAL m(b) AS o(y) WHERE c > 2")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	Inspect(s, func(n Node) bool {
		switch n := n.(type) {
		case *ColumnRef:
			names = append(names, strings.Join(n.Names, "."))
		case *FuncCall:
			names = append(names, n.Name+"()")
		case *TableRef:
			names = append(names, "table "+n.Name)
		}
		return true
	})
	want := "f() a table t m() b c"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("visited %q, want %q", got, want)
	}
	// Returning false prunes the subtree.
	count := 0
	Inspect(s, func(n Node) bool {
		count++
		_, isQuery := n.(*Query)
		return !isQuery
	})
	if count != 2 {
		t.Errorf("pruned walk visited %d nodes, want 2 (Script, Query)", count)
	}
}
