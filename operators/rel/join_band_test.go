package rel

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// bandSides are a probe side (k, t, f) and a build side of the same
// columns: few keys, so that each key has many rows; times in a small
// range, so that bands of a few units match; some NULLs of each, and NaN
// among the floats.
func bandSides(t *testing.T, mem memory.Allocator, rng *rand.Rand, nProbe, nBuild int) (schema *arrow.Schema, probe, build []arrow.Record) {
	schema = arrow.NewSchema([]arrow.Field{{Name: "k", Type: expr.Int64, Nullable: true}, {Name: "t", Type: expr.Int64, Nullable: true}, {Name: "f", Type: expr.Float64, Nullable: true}}, nil)
	row := func() []any {
		r := []any{int64(rng.Intn(3)), int64(rng.Intn(2000) - 1000), float64(rng.Intn(200)) / 4}
		switch rng.Intn(40) {
		case 0:
			r[0] = nil
		case 1:
			r[1] = nil
		case 2:
			r[2] = nil
		case 3:
			r[2] = math.NaN()
		}
		return r
	}
	side := func(n int) []arrow.Record {
		var out []arrow.Record
		for b := 0; b < 3; b++ {
			var rows [][]any
			for range n / 3 {
				rows = append(rows, row())
			}
			out = append(out, makeRecord(t, mem, schema, rows))
		}
		return out
	}
	return schema, side(nProbe), side(nBuild)
}

// A join whose condition compares the two sides (BETWEEN, <, <=, >, >=,
// either side first, with or without an equality key) gives the nested
// loop's answer through the band index, for every kind that takes a
// residual: NULLs on either side, NaN among floats (whose comparison the
// index leaves to the residual), two comparisons of different columns
// (one orders the index, the other is the residual's). A LEFT JOIN's
// rows none of whose pairs pass go out once with NULLs. The index is
// built where a comparison orders, and not where keys leave few rows
// each. Nothing leaks.
func TestBandJoinMatchesTheNestedLoop(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	reg := expr.Builtins()
	rng := rand.New(rand.NewSource(5))
	schema, probe, build := bandSides(t, mem, rng, 600, 750)
	defer func() {
		for _, r := range append(probe, build...) {
			r.Release()
		}
	}()
	col := func(i int) expr.Expr {
		f := schema.Field(i % 3)
		return &expr.Column{Index: i, Name: f.Name, DataType: f.Type}
	}
	lit := func(v int64) expr.Expr { l, _ := expr.NewLiteral(v); return l }
	call := func(name string, args ...expr.Expr) expr.Expr {
		c, err := reg.NewCall(name, args...)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	and := func(es ...expr.Expr) expr.Expr { l, _ := expr.NewLogic(expr.OpAnd, es...); return l }
	between := func(x, lo, hi expr.Expr) expr.Expr {
		b, err := expr.NewBetween(x, lo, hi, false)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// Probe columns are 0-2, build columns 3-5.
	pk, pt, pf, bk, bt, bf := col(0), col(1), col(2), col(3), col(4), col(5)
	cases := []struct {
		name  string
		keyed bool
		on    expr.Expr
		band  bool
	}{
		{"between", false, between(pt, call("subtract", bt, lit(3)), call("add", bt, lit(3))), true},
		{"build between probes", false, between(bt, call("subtract", pt, lit(2)), pt), true},
		{"strict both ways", false, and(call("less", bt, pt), call("greater", call("add", bt, lit(4)), pt)), true},
		{"probe first", false, and(call("greater_equal", pt, bt), call("less_equal", pt, call("add", bt, lit(1)))), true},
		{"keyed", true, and(call("equal", pk, bk), call("greater", pt, bt), call("less_equal", pt, call("add", bt, lit(50)))), true},
		{"floats with NaN", false, and(call("greater_equal", pf, bf), call("less", pt, bt), call("greater", pt, call("subtract", bt, lit(5)))), true},
		{"two columns", false, and(call("less", pt, bt), call("greater", pf, bf), call("greater", pt, call("subtract", bt, lit(6)))), true},
		{"only floats with NaN", false, call("greater_equal", pf, bf), false},
	}
	zero := lit(0)
	for _, c := range cases {
		for _, kind := range []JoinKind{InnerJoin, LeftJoin, SemiJoin, AntiJoin, MarkJoin} {
			name := fmt.Sprintf("%s, %s", c.name, kind)
			var lk, rk []expr.Expr
			res := c.on
			if c.keyed {
				lk, rk, res = SplitJoinCondition(c.on, 3)
			} else {
				lk, rk = []expr.Expr{zero}, []expr.Expr{zero} // a cross join's one key
			}
			spec := JoinSpec{Kind: kind, LeftKeys: lk, RightKeys: rk, Residual: res, Mark: "m"}
			// The band over the direct index and over the hash table,
			// and the nested loop.
			var results [3][][]any
			for p, noBand := range []bool{false, false, true} {
				j, err := NewHashJoin(mem, spec, schema, schema, functions.Builtins())
				if err != nil {
					t.Fatal(err)
				}
				j.noBand, j.noDirect = noBand, p == 1
				if err := j.Build(build, schema); err != nil {
					t.Fatal(err)
				}
				if got := j.tab.band != nil; got != (c.band && !noBand) {
					t.Fatalf("%s: band index %v", name, got)
				}
				if got := j.tab.direct != nil; got != (p != 1) {
					t.Fatalf("%s: direct index %v", name, got)
				}
				results[p] = append(results[p], probeRows(t, j, probe)...)
				j.Release()
			}
			if len(results[2]) == 0 {
				t.Fatalf("%s: no rows", name)
			}
			sameRows(t, name+" (direct)", results[0], results[2])
			sameRows(t, name+" (hashed)", results[1], results[2])
		}
	}
}

// The filter over an inner or cross join (JoinSpec.Prune) is judged with
// the residual: what comes out is the filter's rows alone, not the
// product, and its comparisons of the two sides index the table. Keys
// that few rows share build no index (walking them is cheaper) and still
// leave out what the filter drops. A semi join ignores it: the filter
// above it sees its rows, not pairs.
func TestBandJoinPrunesForTheFilterAbove(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	reg := expr.Builtins()
	rng := rand.New(rand.NewSource(8))
	schema, probe, build := bandSides(t, mem, rng, 600, 900)
	defer func() {
		for _, r := range append(probe, build...) {
			r.Release()
		}
	}()
	pk := &expr.Column{Index: 0, Name: "k", DataType: expr.Int64}
	pt := &expr.Column{Index: 1, Name: "t", DataType: expr.Int64}
	bk := &expr.Column{Index: 3, Name: "k", DataType: expr.Int64}
	bt := &expr.Column{Index: 4, Name: "t", DataType: expr.Int64}
	lo, _ := reg.NewCall("subtract", bt, mustLit(t, int64(7)))
	band, err := expr.NewBetween(pt, lo, bt, false)
	if err != nil {
		t.Fatal(err)
	}
	otherKey, _ := reg.NewCall("not_equal", pk, bk)
	filter, _ := expr.NewLogic(expr.OpAnd, band, otherKey)
	pRows, bRows := recordRows(probe), recordRows(build)
	var want [][]any
	for _, l := range pRows {
		for _, r := range bRows {
			if l[1] != nil && r[1] != nil && l[1].(int64) >= r[1].(int64)-7 && l[1].(int64) <= r[1].(int64) && l[0] != nil && r[0] != nil && l[0] != r[0] {
				want = append(want, append(append([]any{}, l...), r...))
			}
		}
	}
	if len(want) == 0 {
		t.Fatal("no rows pass the filter")
	}
	zero := mustLit(t, int64(0))
	run := func(spec JoinSpec, wantBand bool) [][]any {
		j, err := NewHashJoin(mem, spec, schema, schema, functions.Builtins())
		if err != nil {
			t.Fatal(err)
		}
		defer j.Release()
		if err := j.Build(build, schema); err != nil {
			t.Fatal(err)
		}
		if got := j.tab.band != nil; got != wantBand {
			t.Fatalf("band index %v, want %v", got, wantBand)
		}
		return probeRows(t, j, probe)
	}
	sameRows(t, "cross join under the filter", run(JoinSpec{Kind: InnerJoin, LeftKeys: []expr.Expr{zero}, RightKeys: []expr.Expr{zero}, Prune: filter}, true), want)
	// Keyed by t itself: a few rows a key, no index; the band's rows
	// with equal times.
	var equal [][]any
	for _, r := range want {
		if r[1] == r[4] {
			equal = append(equal, r)
		}
	}
	if len(equal) == 0 {
		t.Fatal("no rows of equal times")
	}
	sameRows(t, "keyed by t", run(JoinSpec{Kind: InnerJoin, LeftKeys: []expr.Expr{pt}, RightKeys: []expr.Expr{&expr.Column{Index: 1, Name: "t", DataType: expr.Int64}}, Prune: filter}, false), equal)
	if n := len(run(JoinSpec{Kind: SemiJoin, LeftKeys: []expr.Expr{zero}, RightKeys: []expr.Expr{zero}, Prune: filter}, false)); n != len(pRows) {
		t.Fatalf("semi join with Prune: %d rows, want every probe row (%d)", n, len(pRows))
	}
}

// BenchmarkBandJoin joins 4,000 rows with 4,000 on t BETWEEN t' - 10 AND
// t' + 10 (times spread over 400,000 units: about 0.2 matches a row, as a
// join of readings to the events around them), as a cross join under the
// filter (Prune), through the band index and through the nested loop
// (every pair made and judged). The same rows come out of both.
func BenchmarkBandJoin(b *testing.B) {
	mem := memory.NewGoAllocator()
	reg := expr.Builtins()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: expr.Int64}, {Name: "t", Type: expr.Int64}}, nil)
	rng := rand.New(rand.NewSource(1))
	const n, batch = 4000, 1000
	side := func() []arrow.Record {
		var out []arrow.Record
		for start := 0; start < n; start += batch {
			rb := array.NewRecordBuilder(mem, schema)
			for i := start; i < start+batch; i++ {
				rb.Field(0).(*array.Int64Builder).Append(int64(i))
				rb.Field(1).(*array.Int64Builder).Append(rng.Int63n(400_000))
			}
			out = append(out, rb.NewRecord())
			rb.Release()
		}
		return out
	}
	probe, build := side(), side()
	pt := &expr.Column{Index: 1, Name: "t", DataType: expr.Int64}
	bt := &expr.Column{Index: 3, Name: "t", DataType: expr.Int64}
	ten, _ := expr.NewLiteral(int64(10))
	lo, _ := reg.NewCall("subtract", bt, ten)
	hi, _ := reg.NewCall("add", bt, ten)
	on, _ := expr.NewBetween(pt, lo, hi, false)
	zero, _ := expr.NewLiteral(int64(0))
	spec := JoinSpec{Kind: InnerJoin, LeftKeys: []expr.Expr{zero}, RightKeys: []expr.Expr{zero}, Residual: on}
	want := -1
	for _, path := range []string{"band", "nested-loop"} {
		b.Run(path, func(b *testing.B) {
			for range b.N {
				j, err := NewHashJoin(mem, spec, schema, schema, functions.Builtins())
				if err != nil {
					b.Fatal(err)
				}
				j.noBand = path != "band"
				if err := j.Build(build, schema); err != nil {
					b.Fatal(err)
				}
				rows := probeCount(b, j, probe)
				j.Release()
				if want < 0 {
					want = rows
				}
				if rows != want || rows == 0 {
					b.Fatalf("%d rows, want %d", rows, want)
				}
			}
		})
	}
}

// Which conjuncts index a join: comparisons of one side's expression with
// the other's, of numbers and times; not NOT BETWEEN, not an OR, not a
// comparison within one side or of an expression reading both, not of
// strings, not of a value that depends on when it is computed (now()).
func TestBandComparisonsAreTheOrderableOnes(t *testing.T) {
	reg := expr.Builtins()
	p := func(i int, typ arrow.DataType) expr.Expr {
		return &expr.Column{Index: i, Name: fmt.Sprint("p", i), DataType: typ}
	}
	b := func(i int, typ arrow.DataType) expr.Expr {
		return &expr.Column{Index: 3 + i, Name: fmt.Sprint("b", i), DataType: typ}
	}
	call := func(name string, args ...expr.Expr) expr.Expr {
		c, err := reg.NewCall(name, args...)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	between := func(x, lo, hi expr.Expr, not bool) expr.Expr {
		e, err := expr.NewBetween(x, lo, hi, not)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	ts := arrow.FixedWidthTypes.Timestamp_us
	for _, c := range []struct {
		name string
		e    expr.Expr
		want string
	}{
		{"less, probe first", call("less", p(0, expr.Int64), b(0, expr.Int64)), "b0 > p0"},
		{"greater_equal, build first", call("greater_equal", b(0, expr.Int64), p(0, expr.Int64)), "b0 >= p0"},
		{"between", between(p(1, ts), b(1, ts), b(2, ts), false), "b1 <= p1; b2 >= p1"},
		{"not between", between(p(1, ts), b(1, ts), b(2, ts), true), ""},
		{"or", func() expr.Expr {
			o, _ := expr.NewLogic(expr.OpOr, call("less", p(0, expr.Int64), b(0, expr.Int64)), call("less", p(1, expr.Int64), b(1, expr.Int64)))
			return o
		}(), ""},
		{"one side", call("less", p(0, expr.Int64), p(1, expr.Int64)), ""},
		{"both sides in one operand", call("less", call("add", p(0, expr.Int64), b(0, expr.Int64)), b(1, expr.Int64)), ""},
		{"strings", call("less", p(2, expr.String), b(2, expr.String)), ""},
		{"now()", call("less", p(1, ts), call("now")), ""},
		{"now() on the build side", call("less", p(1, ts), call("greatest", b(1, ts), call("now"))), ""},
	} {
		var got []string
		for _, bc := range bandComparisons(c.e, 3) {
			op := map[[2]bool]string{{true, true}: "<", {true, false}: "<=", {false, true}: ">", {false, false}: ">="}[[2]bool{bc.below, bc.strict}]
			got = append(got, fmt.Sprintf("b%d %s %s", expr.Columns(bc.build)[0], op, bc.probe))
		}
		if s := strings.Join(got, "; "); s != c.want {
			t.Errorf("%s: %q, want %q", c.name, s, c.want)
		}
	}
}

// A probe whose residual keeps no pair emits nothing for as long as its
// pairs take: it pauses between pieces of them (where its query's turn
// and its end reach it) and ends with the pause's error, whether the
// rows are walked along a key's chain or through the band index.
func TestAProbeThatEmitsNothingPauses(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	reg := expr.Builtins()
	rng := rand.New(rand.NewSource(2))
	schema, probe, build := bandSides(t, mem, rng, 1500, 1500)
	defer func() {
		for _, r := range append(probe, build...) {
			r.Release()
		}
	}()
	pt := &expr.Column{Index: 1, Name: "t", DataType: expr.Int64}
	bt := &expr.Column{Index: 4, Name: "t", DataType: expr.Int64}
	sum, _ := reg.NewCall("add", pt, bt)
	never, _ := reg.NewCall("less", sum, mustLit(t, int64(-1_000_000)))
	wide, _ := reg.NewCall("less", pt, call2(t, reg, "add", bt, mustLit(t, int64(5000)))) // a band holding every row
	zero := mustLit(t, int64(0))
	stop := errors.New("stopped")
	for _, c := range []struct {
		name string
		res  expr.Expr
		band bool
	}{
		{"the chain", never, false},
		{"the band", andExpr(never, wide), true},
	} {
		j, err := NewHashJoin(mem, JoinSpec{Kind: InnerJoin, LeftKeys: []expr.Expr{zero}, RightKeys: []expr.Expr{zero}, Residual: c.res}, schema, schema, functions.Builtins())
		if err != nil {
			t.Fatal(err)
		}
		pauses := 0
		j.PauseWith(func() error {
			if pauses++; pauses == 3 {
				return stop
			}
			return nil
		})
		if err := j.Build(build, schema); err != nil {
			t.Fatal(err)
		}
		if got := j.tab.band != nil; got != c.band {
			t.Fatalf("%s: band index %v", c.name, got)
		}
		err = j.ProbeEach(probe[0], func(out arrow.Record) error {
			out.Release()
			t.Errorf("%s: a pair passed a residual no pair passes", c.name)
			return nil
		})
		j.Release()
		if !errors.Is(err, stop) || pauses != 3 {
			t.Errorf("%s: %v after %d pauses, want the third pause's error", c.name, err, pauses)
		}
	}
}

func call2(t *testing.T, reg *expr.Registry, name string, args ...expr.Expr) expr.Expr {
	c, err := reg.NewCall(name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
