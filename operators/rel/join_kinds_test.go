package rel

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

var (
	probeSchema = arrow.NewSchema([]arrow.Field{{Name: "a", Type: expr.Int64, Nullable: true}, {Name: "x", Type: expr.Int64, Nullable: true}}, nil)
	buildSchema = arrow.NewSchema([]arrow.Field{{Name: "b", Type: expr.Int64, Nullable: true}, {Name: "y", Type: expr.Int64, Nullable: true}}, nil)
)

// kindsData: probe rows (a, x) and build rows (b, y), small key domains,
// NULL keys on both sides (when nulls).
func kindsData(rng *rand.Rand, nProbe, nBuild int, nulls bool) (probe, build [][]any) {
	val := func(dom int) any {
		if nulls && rng.Intn(12) == 0 {
			return nil
		}
		return int64(rng.Intn(dom))
	}
	for range nProbe {
		probe = append(probe, []any{val(12), int64(rng.Intn(5))})
	}
	for range nBuild {
		build = append(build, []any{val(9), int64(rng.Intn(5))})
	}
	return probe, build
}

// reference: the rows a join kind outputs, row by row by SQL's rules. With
// residual, a match also needs x <> y.
func reference(kind JoinKind, nullAware, residual bool, probe, build [][]any) [][]any {
	match := func(p, b []any) bool {
		if p[0] == nil || b[0] == nil || p[0] != b[0] {
			return false
		}
		return !residual || p[1] != b[1]
	}
	hasNull := false
	for _, b := range build {
		hasNull = hasNull || b[0] == nil
	}
	// A build-side semi (anti) join outputs the rows of its build side
	// that the other side matches: the rows of the (a, x) side, as a
	// semi (anti) join probing with them.
	switch kind {
	case BuildSemi:
		kind = SemiJoin
	case BuildAnti:
		kind = AntiJoin
	}
	var out [][]any
	for _, p := range probe {
		found := false
		for _, b := range build {
			found = found || match(p, b)
		}
		unknown := nullAware && len(build) > 0 && !found && (p[0] == nil || hasNull)
		switch kind {
		case SemiJoin:
			if found {
				out = append(out, p)
			}
		case AntiJoin:
			if !found && !unknown {
				out = append(out, p)
			}
		case MarkJoin:
			var m any = found
			if unknown {
				m = nil
			}
			out = append(out, []any{p[0], p[1], m})
		}
	}
	return out
}

func kindsSpec(t *testing.T, kind JoinKind, nullAware, residual bool) JoinSpec {
	spec := joinOn(t, 2, &expr.Column{Index: 0, Name: "a", DataType: expr.Int64}, &expr.Column{Index: 2, Name: "b", DataType: expr.Int64})
	spec.Kind, spec.NullAware = kind, nullAware
	if residual {
		ne, err := expr.Builtins().NewCall("not_equal", &expr.Column{Index: 1, Name: "x", DataType: expr.Int64}, &expr.Column{Index: 3, Name: "y", DataType: expr.Int64})
		if err != nil {
			t.Fatal(err)
		}
		spec.Residual = ne
	}
	if kind == BuildSemi || kind == BuildAnti {
		// The probe side is (b, y), the build side, which the join
		// outputs, (a, x): the kernel's left is what it probes with.
		spec.LeftKeys, spec.RightKeys = spec.RightKeys, spec.LeftKeys
		spec.LeftKeys[0] = &expr.Column{Index: 0, Name: "b", DataType: expr.Int64}
		spec.RightKeys[0] = &expr.Column{Index: 0, Name: "a", DataType: expr.Int64}
		if residual {
			ne, _ := expr.Builtins().NewCall("not_equal", &expr.Column{Index: 3, Name: "x", DataType: expr.Int64}, &expr.Column{Index: 1, Name: "y", DataType: expr.Int64})
			spec.Residual = ne
		}
	}
	return spec
}

// Semi, anti and mark joins, null-aware (NOT IN / IN) or not, with and
// without a residual condition, and the build-side semi and anti joins,
// give what SQL's rules give row by row: through the kernel on one core,
// through a shared build probed by three instances (JoinBuild, JoinProbe,
// JoinEmit), through the one-operator join a cluster runs
// (StreamTableJoin), and through the spilling join past a tiny limit. Empty sides
// and NULL keys on both sides included; nothing leaks.
func TestJoinKindsMatchReference(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	type variant struct {
		kind                JoinKind
		nullAware, residual bool
	}
	var variants []variant
	for _, k := range []JoinKind{SemiJoin, AntiJoin, MarkJoin, BuildSemi, BuildAnti} {
		for _, res := range []bool{false, true} {
			variants = append(variants, variant{k, false, res})
		}
	}
	variants = append(variants, variant{AntiJoin, true, false}, variant{MarkJoin, true, false})
	for _, size := range [][2]int{{120, 30}, {20, 0}, {0, 10}, {80, 60}} {
		for _, nulls := range []bool{false, true} {
			probeRows, buildRows := kindsData(rng, size[0], size[1], nulls)
			for _, v := range variants {
				name := fmt.Sprintf("%s null-aware=%v residual=%v probe=%d build=%d nulls=%v", v.kind, v.nullAware, v.residual, size[0], size[1], nulls)
				probe, build := probeRows, buildRows
				ps, bs := probeSchema, buildSchema
				want := reference(v.kind, v.nullAware, v.residual, probe, build)
				if v.kind == BuildSemi || v.kind == BuildAnti {
					probe, build, ps, bs = buildRows, probeRows, buildSchema, probeSchema
				}
				spec := kindsSpec(t, v.kind, v.nullAware, v.residual)
				modes := []string{"kernel", "shared", "stream-table"}
				if size[0] == 80 {
					modes = append(modes, "spill") // files: one size is enough
				}
				for _, mode := range modes {
					mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
					got := runKinds(t, mem, mode, spec, ps, bs, probe, build)
					sameRows(t, name+" ("+mode+")", got, want)
					mem.AssertSize(t, 0)
				}
			}
		}
	}
}

func batchesOf(t *testing.T, mem memory.Allocator, schema *arrow.Schema, rows [][]any, per int) []dataflow.Batch {
	var out []dataflow.Batch
	for i := 0; i < len(rows); i += per {
		out = append(out, dataflow.Batch{Record: makeRecord(t, mem, schema, rows[i:min(i+per, len(rows))])})
	}
	return out
}

func runKinds(t *testing.T, mem memory.Allocator, mode string, spec JoinSpec, ps, bs *arrow.Schema, probe, build [][]any) [][]any {
	t.Helper()
	fns := functions.Builtins()
	switch mode {
	case "kernel":
		j, err := NewHashJoin(mem, spec, ps, bs, fns)
		if err != nil {
			t.Fatal(err)
		}
		defer j.Release()
		var brecs []arrow.Record
		for _, b := range batchesOf(t, mem, bs, build, 17) {
			brecs = append(brecs, b.Record)
		}
		if err := j.Build(brecs, bs); err != nil {
			t.Fatal(err)
		}
		releaseAll(brecs)
		var outs []arrow.Record
		for _, b := range batchesOf(t, mem, ps, probe, 23) {
			out, err := j.Probe(b.Record)
			b.Record.Release()
			if err != nil {
				t.Fatal(err)
			}
			if out != nil {
				outs = append(outs, out)
			}
		}
		if spec.Kind.buildOutput() {
			recs, err := j.EmitBuild(7)
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, recs...)
		}
		defer releaseAll(outs)
		return recordRows(outs)
	case "spill", "stream-table":
		capt, err := runJoinGraph(t, mem, batchesOf(t, mem, ps, probe, 23), batchesOf(t, mem, bs, build, 17), func(dataflow.Instance) (dataflow.Operator, error) {
			if mode == "stream-table" {
				return NewStreamTableJoin(spec, ps, bs, fns, nil).WithBatch(13), nil
			}
			return NewSpillJoin(spec, ps, bs, fns, 1, nil), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		recs := capturedRecords(capt)
		defer releaseAll(recs)
		return recordRows(recs)
	}
	// shared: one build, three probes, and an emitter for build-side kinds.
	const p = 3
	users := 1 + p
	if spec.Kind.buildOutput() {
		users++
	}
	shared := NewSharedBuild(users, nil)
	g := &dataflow.Graph{Query: "j"}
	pb, bb := batchesOf(t, mem, ps, probe, 23), batchesOf(t, mem, bs, build, 17)
	l := g.AddOperator(dataflow.OperatorSpec{Name: "probe side", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return builtin.NewSliceSource(pb), nil }})
	r := g.AddOperator(dataflow.OperatorSpec{Name: "build side", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return builtin.NewSliceSource(bb), nil }})
	bop := g.AddOperator(dataflow.OperatorSpec{Name: "build", Inputs: 1, Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
		return NewJoinBuild(spec, ps, bs, fns, shared), nil
	}})
	pop := g.AddOperator(dataflow.OperatorSpec{Name: "probe", Inputs: 2, Outputs: 1, Workers: make([]int, p), New: func(dataflow.Instance) (dataflow.Operator, error) {
		return NewJoinProbe(spec, ps, bs, fns, shared), nil
	}})
	g.Connect(r, 0, bop, 0)
	g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: l}, To: dataflow.Port{Op: pop}, Kind: dataflow.Balance})
	g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: bop}, To: dataflow.Port{Op: pop, Port: 1}, Kind: dataflow.Broadcast})
	last := pop
	if spec.Kind.buildOutput() {
		last = g.AddOperator(dataflow.OperatorSpec{Name: "emit", Inputs: 1, Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
			return NewJoinEmit(shared, 11), nil
		}})
		g.Connect(pop, 0, last, 0)
	}
	capt := &builtin.Captured{}
	sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, New: func(in dataflow.Instance) (dataflow.Operator, error) { return builtin.NewCapture(capt, in.Index), nil }})
	g.Connect(last, 0, sink, 0)
	if err := dataflow.Run(t.Context(), g, dataflow.Config{Allocator: mem}); err != nil {
		t.Fatal(err)
	}
	recs := capturedRecords(capt)
	defer releaseAll(recs)
	return recordRows(recs)
}
