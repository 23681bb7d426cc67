package rewrite

import (
	"fmt"

	"github.com/tierflow/tierflow/planner/logical"
)

// SplitCallsBySourceID gives every source of a latency-bound, size-adaptive
// model call its own call.
const SplitCallsBySourceID RuleID = "split_calls_by_source"

// SplitCallsBySource distributes a model call over the UNION ALL it reads
// (m(UNION ALL a, b) is UNION ALL m(a), m(b): a call is row-wise), with
// the projection PruneColumns put over it, when the model's zoo adapts
// data (variants of two input sizes or more). Each source's rows then go
// through a call of their own, named call#1, call#2, ... in the union's
// order, so that a variant, and with it the size the images are resized
// to before their link, is chosen per source (Jellyfish 5: clients mapped
// to variants) and pinned per source by the latency policy. Apply runs it
// for a query WITH (LATENCY <= x) only: the others keep one call.
func SplitCallsBySource(n logical.Node) logical.Node {
	// Top down: a projection over the call goes into every branch with
	// it (so that AdaptInputs finds each call under the projection that
	// says nothing above reads its image).
	p, _ := n.(*logical.Project)
	lm, ok := n.(*logical.LateralModel)
	if p != nil {
		lm, ok = p.Input.(*logical.LateralModel)
	}
	if u, isUnion := unionUnder(lm, ok); isUnion {
		branches := make([]logical.Node, len(u.Inputs))
		for i, in := range u.Inputs {
			call := logical.NewLateralModel(SplitCallsBySource(in), lm.Model, fmt.Sprintf("%s#%d", lm.Name, i+1), lm.Args, lm.Alias, lm.Out, lm.Pos)
			call.Batch = lm.Batch
			branches[i] = call
			if p != nil {
				branches[i] = p.WithChildren(call)
			}
		}
		return &logical.Union{Inputs: branches, Pos: u.Pos}
	}
	return logical.MapChildren(n, SplitCallsBySource)
}

// unionUnder is the UNION ALL a size-adaptive call lm reads, if it reads one.
func unionUnder(lm *logical.LateralModel, ok bool) (*logical.Union, bool) {
	if !ok || !adaptiveZoo(lm) {
		return nil, false
	}
	u, ok := lm.Input.(*logical.Union)
	return u, ok && len(u.Inputs) >= 2
}

// adaptiveZoo: lm's model has variants of two input sizes or more.
func adaptiveZoo(lm *logical.LateralModel) bool {
	if lm.Model == nil {
		return false
	}
	sides := map[int]bool{}
	for _, v := range lm.Model.Variants {
		if len(v.InputSize) == 2 {
			sides[v.InputSize[0]] = true
		}
	}
	return len(sides) >= 2
}
