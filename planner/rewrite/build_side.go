package rewrite

import (
	"github.com/tierflow/tierflow/planner/cardinality"
	"github.com/tierflow/tierflow/planner/logical"
)

// BuildSideID picks which side of a semi or anti join is built.
const BuildSideID RuleID = "build_side"

// BuildSide makes each semi or anti join of two tables build the smaller
// input: one whose left side (the rows it outputs: TPC-H q4's orders of a
// quarter) is estimated smaller than its right (the lineitems they are
// tested against) builds the left and probes it with the right, marking the
// left rows some right row matches (logical.Join.BuildLeft), instead of
// indexing the larger side. A null-aware join (NOT IN) and a stream on
// either side keep the right side built.
func BuildSide(est *cardinality.Estimator) func(logical.Node) logical.Node {
	return func(n logical.Node) logical.Node {
		return logical.Transform(n, func(x logical.Node) logical.Node {
			j, ok := x.(*logical.Join)
			if !ok || (j.Kind != logical.SemiJoin && j.Kind != logical.AntiJoin) || j.NullAware || j.Window != nil {
				return x
			}
			if !boundedNode(j.Left) || !boundedNode(j.Right) {
				return x
			}
			left := est.Rows(j.Left) < est.Rows(j.Right)
			if left == j.BuildLeft {
				return x
			}
			c := *j
			c.BuildLeft = left
			return c.WithChildren(j.Left, j.Right)
		})
	}
}
