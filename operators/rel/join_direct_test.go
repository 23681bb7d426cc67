package rel

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// joinCase builds a probe side (k, f, s) and a build side (id, q, name) of
// keys drawn from keys(rng), with NULL keys among them.
func joinSides(t *testing.T, mem memory.Allocator, rng *rand.Rand, keyType arrow.DataType, probeKey, buildKey func() any, nProbe, nBuild, batches int) (left, right *arrow.Schema, probe, build []arrow.Record) {
	left = arrow.NewSchema([]arrow.Field{{Name: "k", Type: keyType, Nullable: true}, {Name: "f", Type: expr.Float64, Nullable: true}, {Name: "s", Type: expr.String, Nullable: true}}, nil)
	right = arrow.NewSchema([]arrow.Field{{Name: "id", Type: keyType, Nullable: true}, {Name: "q", Type: expr.Float64, Nullable: true}, {Name: "name", Type: expr.String, Nullable: true}}, nil)
	side := func(schema *arrow.Schema, n int, key func() any) []arrow.Record {
		var out []arrow.Record
		for b := 0; b < batches; b++ {
			var rows [][]any
			for i := 0; i < n/batches; i++ {
				rows = append(rows, []any{key(), float64(rng.Intn(100)), fmt.Sprint("v", rng.Intn(50))})
			}
			out = append(out, makeRecord(t, mem, schema, rows))
		}
		return out
	}
	return left, right, side(left, nProbe, probeKey), side(right, nBuild, buildKey)
}

// refJoin is a nested-loop join of the rows, with the residual f > q when
// residual is set.
func refJoin(probe, build [][]any, left, residual bool) [][]any {
	var out [][]any
	for _, l := range probe {
		matched := false
		for _, r := range build {
			if l[0] == nil || r[0] == nil || l[0] != r[0] { // both sides' keys are of one type
				continue
			}
			if residual && !(l[1].(float64) > r[1].(float64)) {
				continue
			}
			matched = true
			out = append(out, append(append([]any{}, l...), r...))
		}
		if !matched && left {
			out = append(out, append(append([]any{}, l...), nil, nil, nil))
		}
	}
	return out
}

// A join on one integer key indexes dense build keys by an array (direct)
// and sparse ones by the hash table, and both give the nested loop's
// answer: keys of several widths, negative ones, duplicates, NULLs, probe
// keys outside the build's range up to the ends of int64, inner and left,
// with a residual condition (gathered late: its columns first). A probe
// batch whose rows all match once goes on with its own columns, not
// copies. Nothing leaks.
func TestHashJoinDirectMatchesHashedAndReference(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	reg := expr.Builtins()
	rng := rand.New(rand.NewSource(11))
	extremes := []int64{math.MinInt64, math.MaxInt64, -1 << 40, 1 << 40}
	type keyCase struct {
		name         string
		typ          arrow.DataType
		build, probe func() any
		direct       bool
	}
	nullOr := func(v any) any {
		if rng.Intn(15) == 0 {
			return nil
		}
		return v
	}
	cases := []keyCase{
		{"dense int64 with duplicates", expr.Int64, func() any { return nullOr(int64(rng.Intn(300) - 100)) },
			func() any {
				if rng.Intn(20) == 0 {
					return extremes[rng.Intn(len(extremes))]
				}
				return nullOr(int64(rng.Intn(400) - 150))
			}, true},
		{"dense int32", arrow.PrimitiveTypes.Int32, func() any { return nullOr(int64(rng.Intn(500))) }, func() any { return nullOr(int64(rng.Intn(700) - 100)) }, true},
		{"sparse int64", expr.Int64, func() any { return nullOr(int64(rng.Intn(300)) * 1_000_003) }, func() any { return nullOr(int64(rng.Intn(300)) * 1_000_003) }, false},
	}
	for _, kc := range cases {
		for _, kind := range []JoinKind{InnerJoin, LeftJoin} {
			for _, residual := range []bool{false, true} {
				name := fmt.Sprintf("%s, kind %d, residual %v", kc.name, kind, residual)
				left, right, probe, build := joinSides(t, mem, rng, kc.typ, kc.probe, kc.build, 2000, 600, 4)
				lk := &expr.Column{Index: 0, Name: "k", DataType: kc.typ}
				rk := &expr.Column{Index: 3, Name: "id", DataType: kc.typ}
				eq, err := reg.NewCall("equal", lk, rk)
				if err != nil {
					t.Fatal(err)
				}
				var on expr.Expr = eq
				if residual {
					gt, err := reg.NewCall("greater", &expr.Column{Index: 1, Name: "f", DataType: expr.Float64}, &expr.Column{Index: 4, Name: "q", DataType: expr.Float64})
					if err != nil {
						t.Fatal(err)
					}
					on, _ = expr.NewLogic(expr.OpAnd, on, gt)
				}
				lks, rks, res := SplitJoinCondition(on, 3)
				spec := JoinSpec{Kind: kind, LeftKeys: lks, RightKeys: rks, Residual: res}
				var results [2][][]any
				for p, noDirect := range []bool{false, true} {
					j, err := NewHashJoin(mem, spec, left, right, functions.Builtins())
					if err != nil {
						t.Fatal(err)
					}
					j.noDirect = noDirect
					if err := j.Build(build, right); err != nil {
						t.Fatal(err)
					}
					if got := j.direct != nil; got != (kc.direct && !noDirect) {
						t.Fatalf("%s: direct index %v", name, got)
					}
					results[p] = append(results[p], probeRows(t, j, probe)...)
					j.Release()
				}
				want := refJoin(recordRows(probe), recordRows(build), kind == LeftJoin, residual)
				if len(want) == 0 {
					t.Fatalf("%s: no rows", name)
				}
				sameRows(t, name+" (direct)", results[0], want)
				sameRows(t, name+" (hashed)", results[1], want)
				for _, r := range append(probe, build...) {
					r.Release()
				}
			}
		}
	}

	// As many matches as probe rows, but not one each (a key twice, a key
	// missing): the probe rows are gathered, not passed on.
	left := arrow.NewSchema([]arrow.Field{{Name: "k", Type: expr.Int64, Nullable: true}, {Name: "f", Type: expr.Float64, Nullable: true}, {Name: "s", Type: expr.String, Nullable: true}}, nil)
	right := arrow.NewSchema([]arrow.Field{{Name: "id", Type: expr.Int64, Nullable: true}, {Name: "q", Type: expr.Float64, Nullable: true}, {Name: "name", Type: expr.String, Nullable: true}}, nil)
	for _, noDirect := range []bool{false, true} {
		l := makeRecord(t, mem, left, [][]any{{int64(1), 1.0, "a"}, {int64(99), 2.0, "b"}, {int64(2), 3.0, "c"}})
		r := makeRecord(t, mem, right, [][]any{{int64(1), 1.0, "x"}, {int64(1), 2.0, "y"}, {int64(2), 3.0, "z"}})
		spec := joinOn(t, 3, &expr.Column{Index: 0, Name: "k", DataType: expr.Int64}, &expr.Column{Index: 3, Name: "id", DataType: expr.Int64})
		j, err := NewHashJoin(mem, spec, left, right, functions.Builtins())
		if err != nil {
			t.Fatal(err)
		}
		j.noDirect = noDirect
		if err := j.Build([]arrow.Record{r}, right); err != nil {
			t.Fatal(err)
		}
		out, err := j.Probe(l)
		if err != nil {
			t.Fatal(err)
		}
		sameRows(t, fmt.Sprintf("a key twice, one missing (noDirect %v)", noDirect), recordRows([]arrow.Record{out}),
			[][]any{{int64(1), 1.0, "a", int64(1), 1.0, "x"}, {int64(1), 1.0, "a", int64(1), 2.0, "y"}, {int64(2), 3.0, "c", int64(2), 3.0, "z"}})
		out.Release()
		j.Release()
		l.Release()
		r.Release()
	}

	// Every probe row matches once: its columns are passed on as they are.
	_, _, probe, build := joinSides(t, mem, rng, expr.Int64, func() any { return int64(rng.Intn(100)) }, nil, 1000, 0, 1)
	build[0].Release()
	bb := array.NewRecordBuilder(mem, right)
	for i := range 100 {
		bb.Field(0).(*array.Int64Builder).Append(int64(i))
		bb.Field(1).(*array.Float64Builder).Append(float64(i))
		bb.Field(2).(*array.StringBuilder).Append(fmt.Sprint("n", i))
	}
	build = []arrow.Record{bb.NewRecord()}
	bb.Release()
	spec := joinOn(t, 3, &expr.Column{Index: 0, Name: "k", DataType: expr.Int64}, &expr.Column{Index: 3, Name: "id", DataType: expr.Int64})
	for _, noDirect := range []bool{false, true} {
		j, err := NewHashJoin(mem, spec, left, right, functions.Builtins())
		if err != nil {
			t.Fatal(err)
		}
		j.noDirect = noDirect
		if err := j.Build(build, right); err != nil {
			t.Fatal(err)
		}
		out, err := j.Probe(probe[0])
		if err != nil {
			t.Fatal(err)
		}
		for c := range 3 {
			if out.Column(c).Data().Buffers()[1] != probe[0].Column(c).Data().Buffers()[1] {
				t.Fatalf("noDirect %v: probe column %d was copied", noDirect, c)
			}
		}
		for i := range 1000 {
			if out.Column(3).(*array.Int64).Value(i) != probe[0].Column(0).(*array.Int64).Value(i) {
				t.Fatalf("row %d matched id %d", i, out.Column(3).(*array.Int64).Value(i))
			}
		}
		out.Release()
		j.Release()
	}
	probe[0].Release()
	build[0].Release()
}

// BenchmarkHashJoinProbe joins 1M lineitem-like rows (l_orderkey = i/4,
// l_quantity) with 250k orders (o_orderkey 0..250k in order,
// o_orderpriority), as the benchmark's join query does: the old path
// (hash table, every probe column gathered), the hash table with the probe
// columns passed on, and the direct index.
func BenchmarkHashJoinProbe(b *testing.B) {
	mem := memory.NewGoAllocator()
	left := arrow.NewSchema([]arrow.Field{{Name: "l_orderkey", Type: expr.Int64}, {Name: "l_quantity", Type: expr.Float64}}, nil)
	right := arrow.NewSchema([]arrow.Field{{Name: "o_orderkey", Type: expr.Int64}, {Name: "o_orderpriority", Type: expr.String}}, nil)
	prios := []string{"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"}
	const n, batch = 1 << 20, 16384
	var probe, build []arrow.Record
	for start := 0; start < n; start += batch {
		lb := array.NewRecordBuilder(mem, left)
		for i := start; i < start+batch; i++ {
			lb.Field(0).(*array.Int64Builder).Append(int64(i / 4))
			lb.Field(1).(*array.Float64Builder).Append(float64(i % 50))
		}
		probe = append(probe, lb.NewRecord())
		lb.Release()
		if start < n/4 {
			rb := array.NewRecordBuilder(mem, right)
			for i := start; i < start+batch; i++ {
				rb.Field(0).(*array.Int64Builder).Append(int64(i))
				rb.Field(1).(*array.StringBuilder).Append(prios[i%5])
			}
			build = append(build, rb.NewRecord())
			rb.Release()
		}
	}
	spec := JoinSpec{LeftKeys: []expr.Expr{&expr.Column{Index: 0, Name: "l_orderkey", DataType: expr.Int64}},
		RightKeys: []expr.Expr{&expr.Column{Index: 0, Name: "o_orderkey", DataType: expr.Int64}}}
	for _, path := range []string{"old", "hashed", "direct"} {
		b.Run(path, func(b *testing.B) {
			for range b.N {
				j, err := NewHashJoin(mem, spec, left, right, functions.Builtins())
				if err != nil {
					b.Fatal(err)
				}
				j.noDirect, j.gatherAll = path != "direct", path == "old"
				if err := j.Build(build, right); err != nil {
					b.Fatal(err)
				}
				rows := 0
				for _, rec := range probe {
					out, err := j.Probe(rec)
					if err != nil {
						b.Fatal(err)
					}
					rows += int(out.NumRows())
					out.Release()
				}
				if rows != n {
					b.Fatal(rows)
				}
				j.Release()
			}
		})
	}
}
