package policy

import (
	"slices"
	"sort"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/rewrite"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// jfMaxBatch is the largest batch the Jellyfish policy's zoo profiles
// (the planner's largest planned batch).
const jfMaxBatch = 32

// latencyInput is what the Jellyfish policy needs of a query WITH
// (LATENCY <= sloMs): each model call whose zoo adapts data (variants with
// a file of two input sizes or more), its zoo smallest input first, with the bytes one row
// takes at each variant's input size and the profiled latency by batch
// size on the workers' type, and the variant it runs under variants. nil
// when there is no bound or no call to adapt.
//
// adapt is the script's SET planner.adapt_inputs: with uint8 a row's image
// takes a byte a pixel on the link (rewrite.AdaptInputs).
func latencyInput(root logical.Node, sloMs float64, ws []deploy.Worker, variants map[string]string, adapt string) *control.LatencyInput {
	pixel := 4.0 // float32
	if adapt == rewrite.AdaptUint8 {
		pixel = 1
	}
	if sloMs <= 0 {
		return nil
	}
	in := &control.LatencyInput{SLOMs: sloMs}
	var walk func(logical.Node)
	walk = func(nd logical.Node) {
		for _, ch := range nd.Children() {
			walk(ch)
		}
		n, ok := nd.(*logical.LateralModel)
		if !ok || n.Model == nil {
			return
		}
		var vs []*catalog.Variant
		for _, v := range n.Model.Variants {
			if v.File != "" {
				vs = append(vs, v)
			}
		}
		sides := map[int]bool{}
		for _, v := range vs {
			if len(v.InputSize) == 2 {
				sides[v.InputSize[0]] = true
			}
		}
		if len(sides) < 2 {
			// Not a size-adaptive zoo: the planner's choice stands (the
			// drift and data-aware policies judge it).
			return
		}
		full := rowBytes(n)
		frame := frameBytes(n)
		// Under a LATENCY bound the adapt step picks each batch's side of
		// a tensor (rewrite.AdaptInputs), unless adaptation is off. An
		// encoded frame has no adapt step: it crosses whole, whatever the
		// variant, and the variant's side is the network's alone.
		call := control.LatencyCall{Call: n.Name, Variant: runningVariant(n, vs, variants), SidesPerBatch: full > 0 && adapt != rewrite.AdaptOff}
		for _, v := range vs {
			jv := control.JFVariant{Name: v.Name, Accuracy: v.Accuracy / 100, Bytes: full, BatchMs: batchMs(v, ws)}
			switch {
			case len(v.InputSize) == 2 && full > 0:
				// A square image resized to the variant's size: its
				// pixels, plus the row's framing.
				jv.Side = v.InputSize[0]
				jv.Bytes = pixel*float64(v.InputSize[0]*v.InputSize[1]) + rowOverhead
			case frame > 0:
				// The frame's bytes for every variant: a slower link
				// leaves each the same less of the SLO to compute in
				// (Jellyfish eq. 1), which only a faster variant meets.
				jv.Bytes = frame
				if len(v.InputSize) == 2 {
					jv.Side = max(v.InputSize[0], v.InputSize[1])
				}
			}
			call.Variants = append(call.Variants, jv)
		}
		sort.SliceStable(call.Variants, func(i, j int) bool {
			a, b := call.Variants[i], call.Variants[j]
			if a.Bytes != b.Bytes {
				return a.Bytes < b.Bytes
			}
			if a.Side != b.Side {
				return a.Side < b.Side
			}
			return a.Accuracy < b.Accuracy
		})
		in.Calls = append(in.Calls, call)
	}
	walk(root)
	if len(in.Calls) == 0 {
		return nil
	}
	return in
}

// rowOverhead is what a row costs on a relay link beyond its tensor
// (its other columns and its share of the Arrow IPC framing), a rough
// constant: the tensor dominates.
const rowOverhead = 64

// rowBytes is what the call's tensor argument takes per row (float32),
// plus the overhead; 0 when the argument is not a tensor column.
func rowBytes(n *logical.LateralModel) float64 {
	if len(n.Args) == 0 {
		return 0
	}
	c, ok := n.Args[0].(*expr.Column)
	if !ok {
		return 0
	}
	if l, ok := c.DataType.(*arrow.FixedSizeListType); ok {
		return float64(4*l.Len()) + rowOverhead
	}
	return 0
}

// frameBytes is what one row of the call's argument takes on a link when
// it is an encoded image (a BLOB column of a stream's frames, PNG or
// JPEG): the stream's mean item size (catalog item_kb), plus the row's
// framing; 0 otherwise, or when no stream under the call says its size.
func frameBytes(n *logical.LateralModel) float64 {
	if len(n.Args) == 0 {
		return 0
	}
	c, ok := n.Args[0].(*expr.Column)
	if !ok || !expr.IsBlob(c.DataType) {
		return 0
	}
	kb := 0.0
	logical.Walk(n.Input, func(x logical.Node) bool {
		if s, ok := x.(*logical.Scan); ok && s.Stream != nil && s.Stream.ItemKB > kb {
			kb = s.Stream.ItemKB
		}
		return true
	})
	if kb <= 0 {
		return 0
	}
	return kb*1024 + rowOverhead
}

// runningVariant is the variant the runtime runs for call n under
// variants (runtime/inference.ChooseVariant's rule: by call, by model,
// else the most accurate with a file).
func runningVariant(n *logical.LateralModel, vs []*catalog.Variant, variants map[string]string) string {
	for _, k := range []string{n.Name, n.Model.Name} {
		if v, ok := variants[k]; ok {
			return v
		}
	}
	best := vs[0]
	for _, v := range vs {
		if v.Accuracy > best.Accuracy {
			best = v
		}
	}
	return best.Name
}

// batchMs is v's profiled latency (P90) of a call of 1..jfMaxBatch rows
// on the first of the workers' types that has a by-batch profile, at that
// worker's thread count (else
// any profile; else 1 ms a row, which only the network then decides).
func batchMs(v *catalog.Variant, ws []deploy.Worker) []float64 {
	var l catalog.Latency
	found := false
	for _, w := range ws {
		for _, k := range []string{w.Name, w.Type} {
			if x, ok := v.Latency[k]; ok && len(x.ByBatch) > 0 && !found {
				// The profile of the worker's own thread count, where
				// the catalog has one.
				l, found = x.ForThreads(w.Threads), true
			}
		}
	}
	if !found {
		keys := make([]string, 0, len(v.Latency))
		for k := range v.Latency {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !found || len(v.Latency[k].ByBatch) > 0 && len(l.ByBatch) == 0 {
				l, found = v.Latency[k], true
			}
		}
	}
	out := make([]float64, jfMaxBatch)
	for b := 1; b <= jfMaxBatch; b++ {
		ms := float64(b)
		if found {
			ms = l.BatchMs(b, 90)
		}
		if b > 1 {
			ms = max(ms, out[b-2]) // non-decreasing, as the scheduler wants
		}
		out[b-1] = ms
	}
	return out
}

// callSources sets each call's Sources: the workers placement p runs the
// scans of the streams under the call on (a query with a call per source,
// rewrite.SplitCallsBySource, or one source). Set for a call over every
// source too: the links out of the call's own worker (a detector's boxes
// and crops going on to a recogniser) are not its clients' uplinks.
func callSources(in *control.LatencyInput, root logical.Node, p *deploy.Placement) {
	if in == nil || p == nil {
		return
	}
	scans := map[string][]string{} // call -> "scan <stream>" operators
	logical.Walk(root, func(nd logical.Node) bool {
		if lm, ok := nd.(*logical.LateralModel); ok {
			logical.Walk(lm.Input, func(x logical.Node) bool {
				if s, ok := x.(*logical.Scan); ok && s.Stream != nil {
					scans[lm.Name] = append(scans[lm.Name], "scan "+s.Stream.Name)
				}
				return true
			})
		}
		return true
	})
	for i := range in.Calls {
		c := &in.Calls[i]
		if len(scans[c.Call]) == 0 {
			continue
		}
		seen := map[string]bool{}
		for _, op := range p.Operators {
			if !slices.Contains(scans[c.Call], op.Name) {
				continue
			}
			for _, w := range op.Workers {
				if name := p.Workers[w]; !seen[name] {
					seen[name] = true
					c.Sources = append(c.Sources, name)
				}
			}
		}
		sort.Strings(c.Sources)
	}
}
