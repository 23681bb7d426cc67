package rewrite_test

import (
	"strings"
	"testing"

	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/rewrite"
)

// subqueryPlans lists the plans of the subqueries in root's filters.
func subqueryPlans(root logical.Node) []logical.Node {
	var out []logical.Node
	logical.Walk(root, func(n logical.Node) bool {
		if f, ok := n.(*logical.Filter); ok {
			expr.Transform(f.Pred, func(x expr.Expr) expr.Expr {
				if sq, ok := x.(*expr.Subquery); ok {
					out = append(out, sq.Plan.(logical.Node))
				}
				return x
			})
		}
		return true
	})
	return out
}

// The rules run over a subquery's plan too: TPC-H Q20's IN subquery, whose
// correlated sum the binder decorrelated into a join with a grouped
// lineitem, comes out with the LEFT JOIN that the filter ps_availqty > sum
// makes inner an inner join, ordered with the rest. A copy of an IN filter (the
// key's class: s_suppkey = ps_suppkey) shares the optimized plan with the
// original, so it still runs once.
func TestSubqueryPlansAreRewritten(t *testing.T) {
	plan, err := bindQuery(`SELECT s_name FROM supplier, nation
WHERE s_suppkey IN (
  SELECT ps_suppkey FROM partsupp
  WHERE ps_partkey IN (SELECT p_partkey FROM part WHERE p_name LIKE 'forest%')
  AND ps_availqty > (SELECT 0.5 * sum(l_quantity) FROM lineitem
    WHERE l_partkey = ps_partkey AND l_suppkey = ps_suppkey AND l_shipdate >= TIMESTAMP '1994-01-01'))
AND s_nationkey = n_nationkey AND n_name = 'CANADA'`)
	if err != nil {
		t.Fatal(err)
	}
	stats := injected{}
	parseStats(t, "stats lineitem rows=6001215 l_partkey=200000 l_suppkey=10000", stats)
	parseStats(t, "stats partsupp rows=800000 ps_partkey=200000 ps_suppkey=10000", stats)
	parseStats(t, "stats part rows=200000 p_partkey=200000 p_name=200000", stats)
	before := subqueryPlans(plan.Root)
	if len(before) == 0 {
		t.Fatal("no subquery in the bound plan")
	}
	// As bound: a LEFT JOIN under the filter that reads its NULLs.
	pushed := func(p logical.Node) bool {
		f := logical.Format(p, nil)
		return strings.Contains(f, "Inner Join") && !strings.Contains(f, "Left Join")
	}
	if pushed(before[0]) {
		t.Fatalf("the bound subquery has its join made inner already:\n%s", logical.Format(before[0], nil))
	}
	rw := rewrite.ApplyWith(plan, rewrite.Options{Stats: stats.stats})
	after := subqueryPlans(rw.Root)
	if len(after) == 0 {
		t.Fatal("no subquery after the rewrite")
	}
	got := logical.Format(after[0], nil)
	if !pushed(after[0]) {
		t.Fatalf("the subquery's plan was not rewritten:\n%s", got)
	}
	for _, p := range after[1:] {
		if p != after[0] {
			t.Fatalf("a copy of the IN filter has a plan of its own:\n%s", logical.Format(p, nil))
		}
	}
}
