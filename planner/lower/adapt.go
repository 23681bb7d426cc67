package lower

import (
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/optimize"
	"github.com/tierflow/tierflow/planner/rewrite"
)

// adaptedInput is a model call's input column that rewrite.AdaptInputs
// resizes before the link when one variant runs, with its KB per row then.
type adaptedInput struct {
	col int
	kb  float64
}

// adaptedInputs asks rewrite.AdaptInputs itself, variant by variant, which
// input column of call x it resizes and to what, so that the cost counts
// exactly what the runtime sends (runtime/deploy applies the same rule to
// the chosen variants). nil when nothing is adapted.
func (l *lowerer) adaptedInputs(x *logical.LateralModel) map[string]adaptedInput {
	if l.opt.AdaptInputs == rewrite.AdaptOff || l.root == nil || x.Model == nil {
		return nil
	}
	var out map[string]adaptedInput
	for _, v := range x.Model.Variants {
		root := rewrite.AdaptInputs(l.root, map[string]string{x.Name: v.Name}, l.opt.AdaptInputs)
		if root == l.root {
			continue
		}
		logical.Walk(root, func(n logical.Node) bool {
			// The rewrite rebuilds the call: it is x by name and position.
			lm, ok := n.(*logical.LateralModel)
			if !ok || lm.Name != x.Name || lm.Pos != x.Pos {
				return true
			}
			if a, ok := lm.Input.(*logical.Adapt); ok {
				if out == nil {
					out = map[string]adaptedInput{}
				}
				out[v.Name] = adaptedInput{col: a.Column, kb: logical.EstimatedBytes(a.Schema().Field(a.Column)) / 1024}
			}
			return false
		})
	}
	return out
}

// adaptedSizes adds to e, an edge from stage from into model stage s, the
// message size for each variant of s whose adapted column crosses e: the
// column's bytes as the stream has them replaced by the resized ones. An
// image that is an earlier model's output is left at its size.
func (l *lowerer) adaptedSizes(e *optimize.Edge, s, from *Stage, own *logical.LateralModel, shares, fixed float64, sizes []colSize, below logical.Node, adapted map[string]adaptedInput) {
	if len(adapted) == 0 || s.Model == nil {
		return
	}
	crosses := map[int]bool{}
	for _, c := range l.branchColumns(below, from) {
		crosses[c] = true
	}
	for _, v := range s.Model.Variants {
		a, ok := adapted[v.Name]
		if !ok || !crosses[a.col] || a.col >= len(sizes) {
			continue
		}
		cs := sizes[a.col]
		if cs.model != nil || (from.Kind != "source" && !cs.payload) {
			continue
		}
		kb := max(fixed-cs.kb, 0) + a.kb
		if own != nil && shares > 0 {
			// Both variants matter: the most specific size wins.
			for _, fv := range own.Model.Variants {
				e.Sizes = append(e.Sizes, optimize.MessageSize{FromVariant: fv.Name, ToVariant: v.Name, KB: kb + shares*fv.OutputKB})
			}
			continue
		}
		e.Sizes = append(e.Sizes, optimize.MessageSize{ToVariant: v.Name, KB: kb})
	}
}
