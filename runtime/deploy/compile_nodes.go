package deploy

import (
	"fmt"
	"strings"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/planner/logical"
)

// Nodes pairs every operator of g with the logical node it implements.
// operators/exec builds a plan bottom-up, children in order, a scan as its
// source plus an optional "columns" projection; walking the plan the same way
// recovers the pairing (a model call may be followed by its label meter, and
// preceded by the adaptation of its input, which pairs with that input).
// An aggregation equal to one walked before (logical.SubtreeKey) has no
// operators of its own. A graph of another shape is an ErrMismatch.
func Nodes(g *dataflow.Graph, plan *logical.Plan) ([]logical.Node, error) {
	out := make([]logical.Node, 0, len(g.Operators))
	common := map[string]bool{} // aggregations walked, by logical.SubtreeKey
	var walk func(n logical.Node) error
	walk = func(n logical.Node) error {
		if a, ok := n.(*logical.Aggregate); ok {
			// operators/exec builds an aggregation equal to one before it
			// as no operator: its consumers read the first one's.
			if key, ok := logical.SubtreeKey(a); ok {
				if common[key] {
					return nil
				}
				common[key] = true
			}
		}
		for _, c := range n.Children() {
			if err := walk(c); err != nil {
				return err
			}
		}
		if lm, ok := n.(*logical.LateralModel); ok && len(out) < len(g.Operators) && strings.HasPrefix(g.Operators[len(out)].Name, "adapt ") {
			// The source side's data adaptation for the call (Script's
			// rewrite.AdaptInputs, after model selection): it runs with
			// the call's input, before the link.
			out = append(out, lm.Input)
		}
		i := len(out)
		if i >= len(g.Operators) {
			return fmt.Errorf("%w: the plan has more operators than the graph (%d)", ErrMismatch, len(g.Operators))
		}
		name := g.Operators[i].Name
		if _, ok := n.(*logical.Aggregate); ok && phased(g, i) {
			// An aggregation in two phases (operators/exec windowPhases):
			// its partial aggregation, the final one and the projection
			// that finishes it all implement the one node.
			out = append(out, n, n, n)
			return nil
		}
		if _, ok := n.(*logical.Aggregate); ok && name == exec.SpillingAggregate && i+1 < len(g.Operators) && g.Operators[i+1].Name == "project" {
			// A GROUP BY that spills (operators/exec spilling) and the
			// projection that finishes it.
			out = append(out, n, n)
			return nil
		}
		if want := opName(n); want != "" && !strings.HasPrefix(name, want) {
			return fmt.Errorf("%w: operator %d is %q, the plan's node there is %s", ErrMismatch, i, name, n.Describe())
		}
		out = append(out, n)
		if _, ok := n.(*logical.Scan); ok && i+1 < len(g.Operators) && g.Operators[i+1].Name == "columns" {
			out = append(out, n)
		}
		if _, ok := n.(*logical.LateralModel); ok && i+1 < len(g.Operators) && strings.HasPrefix(g.Operators[i+1].Name, "labels ") {
			out = append(out, n) // the model call's label meter
		}
		return nil
	}
	if err := walk(plan.Root); err != nil {
		return nil, err
	}
	if len(out) != len(g.Operators) {
		return nil, fmt.Errorf("%w: the graph has %d operators, the plan %d", ErrMismatch, len(g.Operators), len(out))
	}
	return out, nil
}

// opName is the name (prefix) operators/exec gives a node's operator.
func opName(n logical.Node) string {
	switch n.(type) {
	case *logical.Scan:
		return "scan "
	case *logical.Filter:
		return "filter"
	case *logical.Project:
		return "project"
	case *logical.Aggregate:
		return "aggregate"
	case *logical.Join:
		return "join"
	case *logical.Union:
		return "union"
	case *logical.Limit:
		return "limit"
	case *logical.Sort:
		return "sort"
	case *logical.WindowFuncs:
		return "window"
	case *logical.Sink:
		return "sink"
	case *logical.LateralModel:
		return "model "
	}
	return ""
}

// phased reports whether operators i, i+1 and i+2 of g are an aggregation
// in two phases: a partial aggregation, the final one, and the projection
// that finishes it.
func phased(g *dataflow.Graph, i int) bool {
	return i+2 < len(g.Operators) && g.Operators[i].Name == PartialAggregate &&
		g.Operators[i+1].Name == FinalAggregate && g.Operators[i+2].Name == "project"
}

// The names operators/exec gives the two phases of a split aggregation.
const (
	PartialAggregate = "partial aggregate"
	FinalAggregate   = "final aggregate"
)
