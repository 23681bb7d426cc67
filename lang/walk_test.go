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

func TestRewriteCopiesAndReplaces(t *testing.T) {
	s, err := Parse("q", "SELECT a + 1 AS x FROM t WHERE b > (SELECT max(c) FROM u WHERE u.d = a)")
	if err != nil {
		t.Fatal(err)
	}
	q := s.Statements[0].(*Query)
	before := Print(q)
	out := Rewrite(q, func(n Node) (Node, bool) {
		if c, ok := n.(*ColumnRef); ok && len(c.Names) == 1 && c.Names[0] == "a" {
			return &ColumnRef{Pos: c.Pos, Names: []string{"o", "a"}}, true
		}
		return nil, false
	})
	if got := Print(q); got != before {
		t.Fatalf("the original changed:\n%s", got)
	}
	want := strings.ReplaceAll(before, " a ", " o.a ")
	want = strings.ReplaceAll(want, "= a\n", "= o.a\n")
	if got := Print(out); got != want {
		t.Fatalf("rewritten:\n%s\nwant\n%s", got, want)
	}
	if out == q || out.Select == q.Select {
		t.Fatal("not a copy")
	}
}
