package rewrite

import (
	"slices"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// AdaptInputsID resizes images before they cross a link.
const AdaptInputsID RuleID = "adapt_inputs"

// Modes of AdaptInputs (SET planner.adapt_inputs).
const (
	// AdaptResize resizes to the variant's input size, float32 pixels
	// (the default).
	AdaptResize = "resize"
	// AdaptUint8 resizes and sends a pixel as one byte.
	AdaptUint8 = "uint8"
	// AdaptOff sends the stream's images as they are; the model call
	// resizes them after the link.
	AdaptOff = "off"
)

// AdaptInputs puts a logical.Adapt under every model call whose variant
// (by call name, then model name, in variants; else the most accurate with
// a file, as the runtime picks) takes smaller square images than the
// stream's (catalog input_size, Jellyfish 7.3): the call's input is then
// resized where it is produced, on the source's side of the link, so that
// the link carries the bytes of the size the model takes. With AdaptUint8
// the images of every variant that declares an input size go as a byte a
// pixel, full-size ones included. It runs after
// model selection, since the size is the chosen variant's. A call adapts
// only when nothing above it reads the image (the projection PruneColumns
// puts over every model call drops it): the query's result is unchanged.
// mode is AdaptResize (or ""), AdaptUint8 or AdaptOff.
func AdaptInputs(n logical.Node, variants map[string]string, mode string) logical.Node {
	if mode == AdaptOff {
		return n
	}
	enc := logical.EncodeFloat32
	if mode == AdaptUint8 {
		enc = logical.EncodeUint8
	}
	return adaptInputs(n, variants, enc)
}

func adaptInputs(n logical.Node, variants map[string]string, enc string) logical.Node {
	if ch := n.Children(); len(ch) > 0 {
		nc := make([]logical.Node, len(ch))
		changed := false
		for i, c := range ch {
			nc[i] = adaptInputs(c, variants, enc)
			changed = changed || nc[i] != c
		}
		if changed {
			n = n.WithChildren(nc...)
		}
	}
	p, ok := n.(*logical.Project)
	if !ok {
		return n
	}
	lm, ok := p.Input.(*logical.LateralModel)
	if !ok {
		return n
	}
	if _, done := lm.Input.(*logical.Adapt); done || len(lm.Args) != 1 {
		return n
	}
	c, ok := lm.Args[0].(*expr.Column)
	if !ok || c.Index < 0 || c.Index >= lm.Input.Schema().NumFields() {
		return n
	}
	for _, e := range p.Exprs {
		if slices.Contains(expr.Columns(e), c.Index) {
			return n // the image is read above the call
		}
	}
	v := variantOf(lm, variants)
	if v == nil || len(v.InputSize) != 2 || v.InputSize[0] != v.InputSize[1] {
		return n
	}
	f := lm.Input.Schema().Field(c.Index)
	dims := logical.TensorDims(f)
	k := len(dims)
	if k < 2 || dims[k-1] != dims[k-2] || v.InputSize[0] > dims[k-1] || v.InputSize[0] <= 0 {
		return n
	}
	if v.InputSize[0] == dims[k-1] && enc == logical.EncodeFloat32 {
		return n // already the size the variant takes, and as it takes it
	}
	if lt, ok := f.Type.(*arrow.FixedSizeListType); !ok || lt.Elem().ID() != arrow.FLOAT32 {
		return n
	}
	in := logical.NewAdapt(lm.Input, c.Index, dims[k-1], v.InputSize[0], enc, lm.Name+" "+v.Name, lm.Pos)
	arg := *c
	arg.DataType = in.Schema().Field(c.Index).Type
	call := logical.NewLateralModel(in, lm.Model, lm.Name, []expr.Expr{&arg}, lm.Alias, lm.Out, lm.Pos)
	call.Batch = lm.Batch
	return p.WithChildren(call)
}

// variantOf is the variant the runtime runs for call lm under variants
// (runtime/inference.ChooseVariant's rule); nil when the name is unknown.
func variantOf(lm *logical.LateralModel, variants map[string]string) *catalog.Variant {
	if lm.Model == nil {
		return nil
	}
	for _, k := range []string{lm.Name, lm.Model.Name} {
		if name, ok := variants[k]; ok {
			return lm.Model.Variant(name)
		}
	}
	var best *catalog.Variant
	for _, v := range lm.Model.Variants {
		if v.File != "" && (best == nil || v.Accuracy > best.Accuracy) {
			best = v
		}
	}
	return best
}
