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

// twoKeyJoin is an inner or left join of probe (a, b, f) with build
// (x, y, q) on a = x AND b = y.
func twoKeyJoin(t testing.TB, kind JoinKind, ta, tb arrow.DataType) (JoinSpec, *arrow.Schema, *arrow.Schema) {
	left := arrow.NewSchema([]arrow.Field{{Name: "a", Type: ta, Nullable: true}, {Name: "b", Type: tb, Nullable: true}, {Name: "f", Type: expr.Float64, Nullable: true}}, nil)
	right := arrow.NewSchema([]arrow.Field{{Name: "x", Type: ta, Nullable: true}, {Name: "y", Type: tb, Nullable: true}, {Name: "q", Type: expr.Float64, Nullable: true}}, nil)
	reg := expr.Builtins()
	e1, err := reg.NewCall("equal", &expr.Column{Index: 0, Name: "a", DataType: ta}, &expr.Column{Index: 3, Name: "x", DataType: ta})
	if err != nil {
		t.Fatal(err)
	}
	e2, err := reg.NewCall("equal", &expr.Column{Index: 1, Name: "b", DataType: tb}, &expr.Column{Index: 4, Name: "y", DataType: tb})
	if err != nil {
		t.Fatal(err)
	}
	on, _ := expr.NewLogic(expr.OpAnd, e1, e2)
	lks, rks, res := SplitJoinCondition(on, 3)
	if len(lks) != 2 || res != nil {
		t.Fatalf("condition split into %d keys and %v", len(lks), res)
	}
	return JoinSpec{Kind: kind, LeftKeys: lks, RightKeys: rks}, left, right
}

// refTwoKeyJoin is the nested loop of twoKeyJoin (NULL equals nothing).
func refTwoKeyJoin(probe, build [][]any, left bool) [][]any {
	var out [][]any
	for _, l := range probe {
		matched := false
		for _, r := range build {
			if l[0] == nil || l[1] == nil || r[0] == nil || r[1] == nil || fmt.Sprint(l[0]) != fmt.Sprint(r[0]) || fmt.Sprint(l[1]) != fmt.Sprint(r[1]) {
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

// A join on two integer keys indexes the build by the packed tuple when
// the keys' build ranges fit in 64 bits, and keeps the byte encoding when
// they do not; both give the nested loop's answer: negative keys,
// duplicates, NULLs on either side, probe values outside the build's range
// (below, above, at the ends of int64), keys of different widths, inner and
// left. Nothing leaks.
func TestHashJoinPackedKeysMatchEncodedAndReference(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(5))
	nullOr := func(v int64) any {
		if rng.Intn(12) == 0 {
			return nil
		}
		return v
	}
	extremes := []int64{math.MinInt64, math.MaxInt64, -1 << 40, 1 << 40}
	type keyCase struct {
		name   string
		ta, tb arrow.DataType
		build  func() []any
		probe  func() []any
		packed bool
	}
	cases := []keyCase{
		{"partkey and suppkey", expr.Int64, expr.Int64,
			func() []any { return []any{nullOr(int64(rng.Intn(200))), nullOr(int64(rng.Intn(40)))} },
			func() []any { return []any{nullOr(int64(rng.Intn(260) - 30)), nullOr(int64(rng.Intn(50) - 5))} }, true},
		{"negative int64 and int32", expr.Int64, arrow.PrimitiveTypes.Int32,
			func() []any { return []any{nullOr(int64(rng.Intn(1000)) - 1<<40), nullOr(int64(rng.Intn(30) - 15))} },
			func() []any {
				if rng.Intn(10) == 0 {
					return []any{extremes[rng.Intn(len(extremes))], nullOr(int64(rng.Intn(30) - 15))}
				}
				return []any{nullOr(int64(rng.Intn(1100)) - 1<<40), nullOr(int64(rng.Intn(40) - 20))}
			}, true},
		{"ranges past 64 bits", expr.Int64, expr.Int64,
			func() []any {
				if rng.Intn(40) == 0 {
					return []any{extremes[rng.Intn(2)], nullOr(int64(rng.Intn(10)))}
				}
				return []any{nullOr(int64(rng.Intn(100))), nullOr(int64(rng.Intn(10)))}
			},
			func() []any { return []any{nullOr(int64(rng.Intn(100))), nullOr(int64(rng.Intn(12)))} }, false},
	}
	rows := func(schema *arrow.Schema, n, batches int, key func() []any) []arrow.Record {
		var out []arrow.Record
		for range batches {
			var rs [][]any
			for range n / batches {
				rs = append(rs, append(key(), float64(rng.Intn(100))))
			}
			out = append(out, makeRecord(t, mem, schema, rs))
		}
		return out
	}
	for _, kc := range cases {
		for _, kind := range []JoinKind{InnerJoin, LeftJoin} {
			name := fmt.Sprintf("%s, kind %d", kc.name, kind)
			spec, left, right := twoKeyJoin(t, kind, kc.ta, kc.tb)
			probe, build := rows(left, 3000, 3, kc.probe), rows(right, 900, 3, kc.build)
			var results [2][][]any
			for p, noPacked := range []bool{false, true} {
				j, err := NewHashJoin(mem, spec, left, right, functions.Builtins())
				if err != nil {
					t.Fatal(err)
				}
				j.noPacked = noPacked
				if err := j.Build(build, right); err != nil {
					t.Fatal(err)
				}
				if got := j.tab.table.packed != nil; got != (kc.packed && !noPacked) {
					t.Fatalf("%s: packed %v", name, got)
				}
				results[p] = append(results[p], probeRows(t, j, probe)...)
				j.Release()
			}
			want := refTwoKeyJoin(recordRows(probe), recordRows(build), kind == LeftJoin)
			if len(want) == 0 {
				t.Fatalf("%s: no rows", name)
			}
			sameRows(t, name+" (packed)", results[0], want)
			sameRows(t, name+" (encoded)", results[1], want)
			for _, r := range append(probe, build...) {
				r.Release()
			}
		}
	}
}

// BenchmarkHashJoinTwoKeys probes 1M lineitem-like rows (l_partkey,
// l_suppkey) against 200k partsupp-like rows (ps_partkey, ps_suppkey: four
// suppliers a part), TPC-H Q9's join: the tuple byte-encoded into a
// string map (the old path) against the packed int64 tuple.
func BenchmarkHashJoinTwoKeys(b *testing.B) {
	mem := memory.NewGoAllocator()
	left := arrow.NewSchema([]arrow.Field{{Name: "l_partkey", Type: expr.Int64}, {Name: "l_suppkey", Type: expr.Int64}, {Name: "l_quantity", Type: expr.Float64}}, nil)
	right := arrow.NewSchema([]arrow.Field{{Name: "ps_partkey", Type: expr.Int64}, {Name: "ps_suppkey", Type: expr.Int64}, {Name: "ps_supplycost", Type: expr.Float64}}, nil)
	const n, parts, batch = 1 << 20, 50000, 16384
	rng := rand.New(rand.NewSource(1))
	var probe, build []arrow.Record
	supp := func(p, i int64) int64 { return (p + i*(10000/4+(p-1)/10000)) % 10000 }
	for start := 0; start < n; start += batch {
		lb := array.NewRecordBuilder(mem, left)
		for range batch {
			p := rng.Int63n(parts)
			lb.Field(0).(*array.Int64Builder).Append(p)
			lb.Field(1).(*array.Int64Builder).Append(supp(p, rng.Int63n(4)))
			lb.Field(2).(*array.Float64Builder).Append(float64(rng.Intn(50)))
		}
		probe = append(probe, lb.NewRecord())
		lb.Release()
	}
	rb := array.NewRecordBuilder(mem, right)
	for p := int64(0); p < parts; p++ {
		for i := int64(0); i < 4; i++ {
			rb.Field(0).(*array.Int64Builder).Append(p)
			rb.Field(1).(*array.Int64Builder).Append(supp(p, i))
			rb.Field(2).(*array.Float64Builder).Append(float64(i))
		}
	}
	build = append(build, rb.NewRecord())
	rb.Release()
	spec, _, _ := twoKeyJoin(b, InnerJoin, expr.Int64, expr.Int64)
	for _, path := range []string{"encoded", "packed"} {
		b.Run(path, func(b *testing.B) {
			for range b.N {
				j, err := NewHashJoin(mem, spec, left, right, functions.Builtins())
				if err != nil {
					b.Fatal(err)
				}
				j.noPacked = path == "encoded"
				if err := j.Build(build, right); err != nil {
					b.Fatal(err)
				}
				rows := probeCount(b, j, probe)
				if rows != n {
					b.Fatal(rows)
				}
				j.Release()
			}
		})
	}
}
