package ml

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
)

// SideVariant is a variant of a model, beside the one a Model is bound to,
// that takes rows of a variable-side column (VariableField) at a smaller
// side natively. A latency-bound source sends each batch at the largest
// side its link carries in time; a frame sent at 14x14 is better answered
// by the variant trained on 14x14 frames than by the 28x28 one on the
// frame resized back up (Jellyfish 2.3: data and DNN adaptation must be
// aligned; on the Fashion-MNIST test frames fit-14 gets 85.9% of 14x14
// frames right, fit-28 84.6% of them upscaled). The Model runs a batch's
// rows of Side on Session, in a call of their own, and its other rows on
// the bound variant.
type SideVariant struct {
	// Name names the variant in the counters (ran_<name>).
	Name string
	// Side is the side of the rows it takes (smaller than the column's).
	Side int
	// Session runs it: one float32 input that takes rows of Side, the
	// bound session's outputs.
	Session Session
	// SoloMs is its profiled one-row call (0: not known), for the lazy
	// drop of a batch all of whose rows it runs.
	SoloMs float64
}

// variantRun is one variant a Model runs: its session (forked for the
// Model) and the scratch of its calls.
type variantRun struct {
	sv  SideVariant // zero for the bound variant
	run Session
	// alt is the variant's index in the Model's alts, -1 for the bound
	// one: where a job keeps its rows' values (job.values).
	alt        int
	inputs     []boundInput
	ins, outs  []Tensor
	outShapes  [][]int64
	scratchOut [][]float32
	// rows are the rows it ran (read by Counters from other goroutines).
	rows atomic.Int64
}

func newVariantRun(sess Session, inputs []boundInput, outInfo []TensorInfo, alt int) *variantRun {
	v := &variantRun{run: sess, alt: alt, inputs: inputs, ins: make([]Tensor, len(inputs)), outs: make([]Tensor, len(outInfo)),
		scratchOut: make([][]float32, len(outInfo))}
	if f, ok := sess.(Forker); ok {
		v.run = f.Fork()
	}
	for _, o := range outInfo {
		v.outShapes = append(v.outShapes, slices.Clone(o.Shape))
	}
	return v
}

// bindSideVariants checks svs against the bound model: one variable-side
// input, each variant of a distinct side under the column's, an input
// that takes rows of that side and the bound session's outputs.
func (m *Model) bindSideVariants(svs []SideVariant) error {
	if len(svs) == 0 {
		return nil
	}
	if len(m.inputs) != 1 || !m.inputs[0].variable {
		return fmt.Errorf("%w: side variants need one variable-side input column", ErrConfig)
	}
	bi := m.inputs[0]
	n := len(bi.colShape)
	to := int(bi.colShape[n-1])
	m.altBySide = map[int]int{}
	for _, sv := range svs {
		if sv.Side <= 0 || sv.Side >= to {
			return fmt.Errorf("%w: side variant %s takes side %d: want one under the column's %d", ErrConfig, sv.Name, sv.Side, to)
		}
		if _, dup := m.altBySide[sv.Side]; dup {
			return fmt.Errorf("%w: two side variants take side %d", ErrConfig, sv.Side)
		}
		ins := sv.Session.Inputs()
		if len(ins) != 1 {
			return fmt.Errorf("%w: side variant %s has inputs %v: want one", ErrSchema, sv.Name, ins)
		}
		shape := slices.Clone(bi.colShape)
		shape[n-2], shape[n-1] = int64(sv.Side), int64(sv.Side)
		rowShape, err := FitInput(ins[0], shape, fmt.Sprintf("rows of side %d of %q", sv.Side, bi.name))
		if err != nil {
			return err
		}
		if ins[0].Shape[0] == 1 && m.cfg.MaxBatch > 1 {
			return fmt.Errorf("%w: side variant %s takes one row a call, the bound model %d", ErrSchema, sv.Name, m.cfg.MaxBatch)
		}
		outs := sv.Session.Outputs()
		if len(outs) != len(m.outInfo) {
			return fmt.Errorf("%w: side variant %s has outputs %v, the bound model %v", ErrSchema, sv.Name, outs, m.outInfo)
		}
		for i, o := range m.outInfo {
			if outs[i].Name != o.Name || outs[i].DType != o.DType || !slices.Equal(outs[i].Shape[1:], o.Shape[1:]) {
				return fmt.Errorf("%w: side variant %s has outputs %v, the bound model %v", ErrSchema, sv.Name, outs, m.outInfo)
			}
		}
		in := boundInput{col: bi.col, name: bi.name, rowShape: rowShape, rowSize: int(product(rowShape)), colShape: shape,
			shape: append([]int64{-1}, rowShape...)}
		v := newVariantRun(sv.Session, []boundInput{in}, m.outInfo, len(m.alts))
		v.sv = sv
		m.altBySide[sv.Side] = len(m.alts)
		m.alts = append(m.alts, v)
	}
	return nil
}

// nativeRows is variableValues' native hook for a record of n rows: a
// row of a side variant's side goes to its slot of that variant's values
// in *alt, and *group says so; both are made on the first such row.
func (m *Model) nativeRows(n int, group *[]uint8, alt *[][]float32) func(r, side int) []float32 {
	return func(r, side int) []float32 {
		a, ok := m.altBySide[side]
		if !ok {
			return nil
		}
		if *group == nil {
			*group = make([]uint8, n)
			*alt = make([][]float32, len(m.alts))
		}
		rs := m.alts[a].inputs[0].rowSize
		if (*alt)[a] == nil {
			(*alt)[a] = make([]float32, n*rs)
		}
		(*group)[r] = uint8(a + 1)
		return (*alt)[a][r*rs : (r+1)*rs]
	}
}

// values are the values of input k for variant v's rows of the job.
func (j *job) values(v *variantRun, k int) []float32 {
	if v.alt < 0 {
		return j.vals[k]
	}
	return j.alt[v.alt]
}

// variant is group g's variant (job.group).
func (m *Model) variant(g int) *variantRun {
	if g == 0 {
		return m.main
	}
	return m.alts[g-1]
}

// groupBySide splits segs by the variant their rows run on, each run of
// one group's rows in a record a segment of its own; nil when every row
// runs on the bound variant.
func (m *Model) groupBySide(segs []segment) [][]segment {
	if len(m.alts) == 0 || !slices.ContainsFunc(segs, func(s segment) bool { return s.j.group != nil }) {
		return nil
	}
	out := make([][]segment, len(m.alts)+1)
	for _, s := range segs {
		g := s.j.group
		if g == nil {
			out[0] = append(out[0], s)
			continue
		}
		end := s.start + s.n
		for r := s.start; r < end; {
			e := r + 1
			for e < end && g[e] == g[r] {
				e++
			}
			out[g[r]] = append(out[g[r]], segment{j: s.j, start: r, n: e - r})
			r = e
		}
	}
	return out
}

// soloMs is the profiled one-row call of the side variant that runs every
// row of j, when one does and its profile is known: the lazy drop's
// compute time for j (a smaller variant is no slower).
func (m *Model) soloMs(j *job) (float64, bool) {
	if j.group == nil || j.n == 0 {
		return 0, false
	}
	g := j.group[0]
	if g == 0 {
		return 0, false
	}
	for _, x := range j.group[1:] {
		if x != g {
			return 0, false
		}
	}
	ms := m.alts[g-1].sv.SoloMs
	return ms, ms > 0
}

// VariantRows are the rows each variant ran, by name (bound names the bound
// variant).
func (m *Model) VariantRows(bound string) map[string]int64 {
	out := map[string]int64{bound: m.main.rows.Load()}
	for _, v := range m.alts {
		out[v.sv.Name] += v.rows.Load()
	}
	return out
}

// RanPrefix marks the counters of the rows each variant of a model call
// ran (ran_<variant>; Operator.Counters).
const RanPrefix = "ran_"

// FormatRan writes the ran_<variant> counters as "fit-28:1200 fit-14:95",
// most rows first; "" when there are none.
func FormatRan(counters map[string]int64) string {
	type kv struct {
		name string
		n    int64
	}
	var xs []kv
	for k, n := range counters {
		if name, ok := strings.CutPrefix(k, RanPrefix); ok {
			xs = append(xs, kv{name, n})
		}
	}
	sort.Slice(xs, func(a, b int) bool {
		if xs[a].n != xs[b].n {
			return xs[a].n > xs[b].n
		}
		return xs[a].name < xs[b].name
	})
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%s:%d", x.name, x.n)
	}
	return strings.Join(parts, " ")
}
