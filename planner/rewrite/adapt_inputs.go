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
	return AdaptInputsSLO(n, variants, mode, 0)
}

// AdaptInputsSLO is AdaptInputs for a query WITH (LATENCY <= sloMs) (0:
// none): a call whose model has variants of smaller square input sizes
// than the running one's gets an adaptation that picks each batch's side
// among them from the link (logical.Adapt.WithSides), a full-size variant
// included, as Jellyfish's client daemon does (7.3): the link's bandwidth
// changes faster than a re-plan can follow.
func AdaptInputsSLO(n logical.Node, variants map[string]string, mode string, sloMs float64) logical.Node {
	return AdaptInputsLatency(n, variants, mode, logical.Objectives{LatencyMs: sloMs})
}

// AdaptInputsLatency is AdaptInputsSLO for a query's latency objective:
// its PERCENTILE is the share of batches the adaptation keeps in time.
func AdaptInputsLatency(n logical.Node, variants map[string]string, mode string, obj logical.Objectives) logical.Node {
	sloMs := obj.LatencyMs
	if mode == AdaptOff {
		return n
	}
	enc := logical.EncodeFloat32
	if mode == AdaptUint8 {
		enc = logical.EncodeUint8
	}
	return adaptInputs(n, variants, enc, sloMs, obj.Percentile)
}

func adaptInputs(n logical.Node, variants map[string]string, enc string, sloMs, percentile float64) logical.Node {
	n = logical.MapChildren(n, func(c logical.Node) logical.Node { return adaptInputs(c, variants, enc, sloMs, percentile) })
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
	var sides []int
	if sloMs > 0 {
		sides = smallerSides(lm.Model, v.InputSize[0])
	}
	if v.InputSize[0] == dims[k-1] && enc == logical.EncodeFloat32 && len(sides) < 2 {
		return n // already the size the variant takes, and as it takes it
	}
	if lt, ok := f.Type.(*arrow.FixedSizeListType); !ok || lt.Elem().ID() != arrow.FLOAT32 {
		return n
	}
	in := logical.NewAdapt(lm.Input, c.Index, dims[k-1], v.InputSize[0], enc, lm.Name+" "+v.Name, lm.Pos).WithSides(sides, sloMs, computeMs(v), percentile)
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

// smallerSides are the square input sizes of m's variants up to side,
// largest (side) first.
func smallerSides(m *catalog.Model, side int) []int {
	sides := []int{side}
	for _, w := range m.Variants {
		if len(w.InputSize) == 2 && w.InputSize[0] == w.InputSize[1] && w.InputSize[0] > 0 && w.InputSize[0] < side && !slices.Contains(sides, w.InputSize[0]) {
			sides = append(sides, w.InputSize[0])
		}
	}
	slices.Sort(sides[1:])
	slices.Reverse(sides[1:])
	return sides
}

// computeMs is v's profiled time of a call of one row (p90, the slowest
// worker type's; per item where no batch-1 call was measured): what the
// adaptation leaves the model of the SLO.
func computeMs(v *catalog.Variant) float64 {
	var ms float64
	for _, l := range v.Latency {
		x := l.P90
		if b, ok := l.ByBatch[1]; ok && b.P90 > 0 {
			x = b.P90
		}
		ms = max(ms, x)
	}
	return ms
}
