package rewrite_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/rewrite"
)

// projections counts a plan's Projects and the expression nodes they hold.
func projections(root logical.Node) (projects, terms int) {
	logical.Walk(root, func(n logical.Node) bool {
		if p, ok := n.(*logical.Project); ok {
			projects++
			for _, e := range p.Exprs {
				expr.Walk(e, func(expr.Expr) bool { terms++; return true })
			}
		}
		return true
	})
	return projects, terms
}

// Merging a projection into the one above copies each of its expressions
// into every reference: a computed one read twice would be computed twice,
// and copies of copies multiply. Forty WITHs of x + x AS x merged into one
// expression of 2^40 terms and hung the planner; now such projections stay
// apart (a term per level), while one read once, or a plain column read
// twice, still merges into one Project.
func TestProjectionsMergeWithoutCopyingWork(t *testing.T) {
	var b strings.Builder
	b.WriteString("WITH c0 AS (SELECT l_quantity AS x FROM lineitem)")
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&b, ", c%d AS (SELECT x + x AS x FROM c%d)", i, i-1)
	}
	b.WriteString(" SELECT x FROM c39")
	for _, c := range []struct {
		name, query       string
		projects, maxTerm int
	}{
		{"read twice, 40 deep", b.String(), 39, 3 * 40},
		{"read once", "SELECT x + 1 AS y FROM (SELECT l_quantity * 2 AS x FROM lineitem) t", 1, 7},
		{"a column read twice", "SELECT x + x AS y FROM (SELECT l_quantity AS x FROM lineitem) t", 1, 3},
	} {
		plan, err := bindQuery(c.query)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		projects, terms := projections(rewrite.Apply(plan).Root)
		if projects != c.projects || terms > c.maxTerm {
			t.Errorf("%s: %d Projects of %d terms, want %d of at most %d:\n%s", c.name, projects, terms, c.projects, c.maxTerm, logical.Format(rewrite.Apply(plan).Root, nil))
		}
	}
}
