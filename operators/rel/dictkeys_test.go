package rel

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

var dictString = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}

// withDictionary is rec with column col (strings) as a dictionary array
// whose dictionary is the batch's own: its distinct values in an order of
// rng's, values no row uses, and (nullValue) a NULL value that some of the
// NULL rows point at, as a Parquet row group's dictionary is per group.
func withDictionary(t testing.TB, mem memory.Allocator, rng *rand.Rand, rec arrow.Record, col int, nullValue bool) arrow.Record {
	s := rec.Column(col).(*array.String)
	var values []string
	at := map[string]int32{}
	for i := range s.Len() {
		if s.IsValid(i) {
			if _, ok := at[s.Value(i)]; !ok {
				at[s.Value(i)] = 0
				values = append(values, s.Value(i))
			}
		}
	}
	values = append(values, fmt.Sprint("unused", rng.Intn(3)), "zz-unused")
	rng.Shuffle(len(values), func(i, j int) { values[i], values[j] = values[j], values[i] })
	db := array.NewStringBuilder(mem)
	defer db.Release()
	for i, v := range values {
		at[v] = int32(i)
		db.Append(v)
	}
	nullAt := int32(-1)
	if nullValue {
		nullAt = int32(len(values))
		db.AppendNull()
	}
	dict := db.NewArray()
	defer dict.Release()
	ib := array.NewInt32Builder(mem)
	defer ib.Release()
	for i := range s.Len() {
		switch {
		case s.IsValid(i):
			ib.Append(at[s.Value(i)])
		case nullAt >= 0 && i%2 == 0:
			ib.Append(nullAt) // NULL through the dictionary
		default:
			ib.AppendNull()
		}
	}
	idx := ib.NewArray()
	defer idx.Release()
	d := array.NewDictionaryArray(dictString, idx, dict)
	defer d.Release()
	cols := append([]arrow.Array(nil), rec.Columns()...)
	cols[col] = d
	fs := append([]arrow.Field(nil), rec.Schema().Fields()...)
	fs[col].Type = dictString
	return array.NewRecord(arrow.NewSchema(fs, nil), cols, rec.NumRows())
}

// A GROUP BY on dictionary codes (a Parquet string column passed on as its
// dictionary, a new dictionary per batch) gives the groups and aggregates
// that the same rows as strings give: one string key, string and integer
// keys, two string keys; NULL rows and NULL dictionary values in the NULL
// group; dictionary values no row uses make no group; through Add and
// through a fused filter, both folded in place and gathered (which keeps
// the dictionary). Nothing leaks.
func TestGroupByDictionaryCodesMatchesStrings(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	reg := expr.Builtins()
	agg := func(name string, args ...expr.Expr) *expr.Aggregate {
		a, err := reg.NewAggregate(name, false, args...)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	lit := func(v any) expr.Expr { l, _ := expr.NewLiteral(v); return l }
	aggs := []*expr.Aggregate{agg("count"), agg("sum", colF), agg("max", colV), agg("min", colTS)}
	names := []string{"n", "sf", "mv", "mt"}
	colS2 := &expr.Column{Index: 3, Name: "s2", DataType: expr.String}
	specs := map[string]AggregateSpec{
		"s":     {Group: []expr.Expr{colS}, GroupNames: []string{"s"}, Aggs: aggs, AggNames: names},
		"s, k":  {Group: []expr.Expr{colS, colK}, GroupNames: []string{"s", "k"}, Aggs: aggs, AggNames: names},
		"k, s":  {Group: []expr.Expr{colK, colS}, GroupNames: []string{"k", "s"}, Aggs: aggs, AggNames: names},
		"s, s2": {Group: []expr.Expr{colS, colS2}, GroupNames: []string{"s", "s2"}, Aggs: aggs, AggNames: names},
	}
	greater := func(x float64) expr.Expr {
		e, err := reg.NewCall("greater", colF, lit(x))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	for name, spec := range specs {
		for _, where := range []expr.Expr{nil, greater(20), greater(240)} {
			rng := rand.New(rand.NewSource(3))
			_, batches, _ := streamRows(rng, 3000, 256, 0)
			var pred *eval.Predicate
			if where != nil {
				var err error
				if pred, err = eval.NewPredicate(where, streamSchema, functions.Builtins()); err != nil {
					t.Fatal(err)
				}
			}
			codes, err := NewHashAggregate(mem, spec, streamSchema, functions.Builtins())
			if err != nil {
				t.Fatal(err)
			}
			strs, err := NewHashAggregate(mem, spec, streamSchema, functions.Builtins())
			if err != nil {
				t.Fatal(err)
			}
			for i, b := range batches {
				rec := makeRecord(t, mem, streamSchema, b)
				drec := withDictionary(t, mem, rng, rec, 3, i%3 == 1)
				for _, x := range []struct {
					h *HashAggregate
					r arrow.Record
				}{{codes, drec}, {strs, rec}} {
					if pred != nil {
						err = x.h.AddWhere(x.r, pred)
					} else {
						err = x.h.Add(x.r)
					}
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
				}
				rec.Release()
				drec.Release()
			}
			finish := func(h *HashAggregate) [][]any {
				recs, err := h.Advance(math.MaxInt64)
				if err != nil {
					t.Fatal(err)
				}
				out := recordRows(recs)
				for _, r := range recs {
					if !arrow.TypeEqual(r.Schema().Field(0).Type, h.Schema().Field(0).Type) {
						t.Fatalf("%s: result key is %s", name, r.Schema().Field(0).Type)
					}
					r.Release()
				}
				h.Release()
				return out
			}
			got, want := finish(codes), finish(strs)
			if len(want) < 5 {
				t.Fatalf("%s where %v: %d groups", name, where, len(want))
			}
			for _, r := range got {
				for _, v := range r[:len(spec.Group)] {
					if s, ok := v.(string); ok && len(s) > 6 && s[:6] == "unused" || v == "zz-unused" {
						t.Fatalf("%s: a group for a value no row has: %v", name, r)
					}
				}
			}
			sameRows(t, fmt.Sprintf("%s where %v", name, where), got, want)
		}
	}
}

// decodedRows is recordRows with dictionary columns read through their
// dictionaries.
func decodedRows(rec arrow.Record) [][]any {
	var out [][]any
	for i := range int(rec.NumRows()) {
		row := make([]any, rec.NumCols())
		for j, c := range rec.Columns() {
			if d, ok := c.(*array.Dictionary); ok {
				if d.IsValid(i) {
					row[j] = d.Dictionary().(*array.String).Value(d.GetValueIndex(i))
				}
				continue
			}
			row[j] = functions.ValueAt(c, i)
		}
		out = append(out, row)
	}
	return out
}

// A join's table whose string column comes as dictionary codes, each batch
// with its own dictionary, joins as the strings do: concatenated with the
// dictionaries unified (the output keeps the codes), or decoded when some
// batches came as strings. Nothing leaks.
func TestJoinTableOfCodes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(5))
	left := arrow.NewSchema([]arrow.Field{{Name: "k", Type: expr.Int64, Nullable: true}}, nil)
	right := arrow.NewSchema([]arrow.Field{{Name: "id", Type: expr.Int64, Nullable: true}, {Name: "s", Type: expr.String, Nullable: true}}, nil)
	names := []string{"AIR", "FOB", "MAIL", "RAIL", "a longer name than a word"}
	var plain, coded []arrow.Record
	for b := range 3 {
		var rows [][]any
		for i := range 40 {
			var s any = names[rng.Intn(len(names))]
			if i%9 == 0 {
				s = nil
			}
			rows = append(rows, []any{int64(b*40 + i), s})
		}
		rec := makeRecord(t, mem, right, rows)
		plain = append(plain, rec)
		coded = append(coded, withDictionary(t, mem, rng, rec, 1, false))
	}
	var probeRows [][]any
	for range 200 {
		probeRows = append(probeRows, []any{int64(rng.Intn(150))})
	}
	probe := makeRecord(t, mem, left, probeRows)
	spec := joinOn(t, 1, &expr.Column{Index: 0, Name: "k", DataType: expr.Int64}, &expr.Column{Index: 1, Name: "id", DataType: expr.Int64})
	join := func(build []arrow.Record, kind JoinKind) ([][]any, bool) {
		spec.Kind = kind
		j, err := NewHashJoin(mem, spec, left, right, functions.Builtins())
		if err != nil {
			t.Fatal(err)
		}
		defer j.Release()
		if err := j.Build(build, right); err != nil {
			t.Fatal(err)
		}
		out, err := j.Probe(probe)
		if err != nil {
			t.Fatal(err)
		}
		defer out.Release()
		_, isDict := out.Column(2).(*array.Dictionary)
		if !arrow.TypeEqual(out.Schema().Field(2).Type, out.Column(2).DataType()) {
			t.Fatalf("schema says %s, column is %s", out.Schema().Field(2).Type, out.Column(2).DataType())
		}
		return decodedRows(out), isDict
	}
	for _, kind := range []JoinKind{InnerJoin, LeftJoin} {
		want, _ := join(plain, kind)
		got, isDict := join(coded, kind)
		if !isDict {
			t.Fatal("the codes were decoded")
		}
		sameRows(t, "codes", got, want)
		mixed := []arrow.Record{coded[0], plain[1], coded[2]}
		got, isDict = join(mixed, kind)
		if isDict {
			t.Fatal("a mixed column came out as codes")
		}
		sameRows(t, "mixed", got, want)
	}
	for _, r := range append(append(plain, coded...), probe) {
		r.Release()
	}
}
