package eval

import (
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// randomBatch makes a record with nulls sprinkled in every column.
func randomBatch(t testing.TB, mem memory.Allocator, rng *rand.Rand, n int) (arrow.Record, [][]any) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: expr.Int64, Nullable: true},
		{Name: "b", Type: expr.Float64, Nullable: true},
		{Name: "s", Type: expr.String, Nullable: true},
		{Name: "ts", Type: expr.Timestamp, Nullable: true},
		{Name: "flag", Type: expr.Bool, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	words := []string{"apple", "banana", "cherry", "date", "apricot", "Berry", ""}
	rows := make([][]any, n)
	cols := make([][]any, 6)
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range rows {
		r := []any{int64(rng.Intn(21) - 10), float64(rng.Intn(400)-200) / 8, words[rng.Intn(len(words))],
			base.Add(time.Duration(rng.Intn(7200)) * time.Second), rng.Intn(2) == 0, int64(rng.Intn(100))}
		for j := range r {
			if rng.Intn(8) == 0 {
				r[j] = nil
			}
			cols[j] = append(cols[j], r[j])
		}
		rows[i] = r
	}
	arrs := make([]arrow.Array, 6)
	for j, f := range schema.Fields() {
		var err error
		if f.Type.ID() == arrow.INT32 {
			b := array.NewInt32Builder(mem)
			for _, v := range cols[j] {
				if v == nil {
					b.AppendNull()
				} else {
					b.Append(int32(v.(int64)))
				}
			}
			arrs[j] = b.NewArray()
			b.Release()
			continue
		}
		if arrs[j], err = functions.ArrayOf(mem, f.Type, cols[j]); err != nil {
			t.Fatal(err)
		}
	}
	rec := array.NewRecord(schema, arrs, int64(n))
	for _, a := range arrs {
		a.Release()
	}
	return rec, rows
}

// ref is an independent row-at-a-time interpreter of the IR, written from SQL's
// rules rather than from the vectorised code.
func ref(e expr.Expr, row []any) any {
	switch e := e.(type) {
	case *expr.Column:
		return row[e.Index]
	case *expr.Literal:
		return e.Value
	case *expr.Cast:
		v := ref(e.Expr, row)
		if v == nil {
			return nil
		}
		switch e.To.ID() {
		case arrow.FLOAT64:
			if i, ok := v.(int64); ok {
				return float64(i)
			}
		case arrow.STRING:
			return fmt.Sprint(v)
		}
		return v
	case *expr.Logic:
		sawNull := false
		for _, a := range e.Args {
			v := ref(a, row)
			if v == nil {
				sawNull = true
				continue
			}
			if v.(bool) == (e.Op == expr.OpOr) {
				return v
			}
		}
		if sawNull {
			return nil
		}
		return e.Op == expr.OpAnd
	case *expr.Not:
		v := ref(e.Expr, row)
		if v == nil {
			return nil
		}
		return !v.(bool)
	case *expr.IsNull:
		return (ref(e.Expr, row) == nil) != e.Negated
	case *expr.Between:
		x, lo, hi := ref(e.Expr, row), ref(e.Lo, row), ref(e.Hi, row)
		ge := cmpNull(x, lo, func(c int) bool { return c >= 0 })
		le := cmpNull(x, hi, func(c int) bool { return c <= 0 })
		v := ref(&expr.Logic{Op: expr.OpAnd, Args: []expr.Expr{lit(ge), lit(le)}}, row)
		if e.Negated && v != nil {
			return !v.(bool)
		}
		return v
	case *expr.In:
		x := ref(e.Expr, row)
		if x == nil {
			return nil
		}
		null := false
		for _, l := range e.List {
			v := ref(l, row)
			if v == nil {
				null = true
			} else if compare(x, v) == 0 {
				return !e.Negated
			}
		}
		if null {
			return nil
		}
		return e.Negated
	case *expr.Like:
		x, p := ref(e.Expr, row), ref(e.Pattern, row)
		if x == nil || p == nil {
			return nil
		}
		re := "^" + strings.ReplaceAll(strings.ReplaceAll(regexp.QuoteMeta(p.(string)), "%", ".*"), "_", ".") + "$"
		return regexp.MustCompile(re).MatchString(x.(string)) != e.Negated
	case *expr.Case:
		for _, w := range e.Whens {
			if c := ref(w.Cond, row); c == true {
				return ref(w.Then, row)
			}
		}
		if e.Else != nil {
			return ref(e.Else, row)
		}
		return nil
	case *expr.Call:
		args := make([]any, len(e.Args))
		for i, a := range e.Args {
			args[i] = ref(a, row)
		}
		return refCall(e.Func, args)
	}
	panic(fmt.Sprintf("ref: %T", e))
}

func lit(v any) expr.Expr { l, _ := expr.NewLiteral(v); return l }

func compare(a, b any) int {
	switch x := a.(type) {
	case int64:
		y := b.(int64)
		return cmp3(x < y, x > y)
	case float64:
		y := b.(float64)
		return cmp3(x < y, x > y)
	case string:
		return strings.Compare(x, b.(string))
	case time.Time:
		return x.Compare(b.(time.Time))
	case bool:
		y := b.(bool)
		return cmp3(!x && y, x && !y)
	}
	panic(fmt.Sprintf("compare %T", a))
}

func cmp3(lt, gt bool) int {
	if lt {
		return -1
	}
	if gt {
		return 1
	}
	return 0
}

func cmpNull(a, b any, ok func(int) bool) any {
	if a == nil || b == nil {
		return nil
	}
	return ok(compare(a, b))
}

func refCall(name string, a []any) any {
	switch name {
	case "coalesce":
		for _, v := range a {
			if v != nil {
				return v
			}
		}
		return nil
	}
	for _, v := range a {
		if v == nil {
			return nil
		}
	}
	switch name {
	case "equal":
		return compare(a[0], a[1]) == 0
	case "not_equal":
		return compare(a[0], a[1]) != 0
	case "less":
		return compare(a[0], a[1]) < 0
	case "less_equal":
		return compare(a[0], a[1]) <= 0
	case "greater":
		return compare(a[0], a[1]) > 0
	case "greater_equal":
		return compare(a[0], a[1]) >= 0
	case "add", "subtract", "multiply", "divide", "integer_divide", "modulo":
		if t, ok := a[0].(time.Time); ok {
			if name == "add" {
				return t.Add(a[1].(time.Duration))
			}
			return t.Add(-a[1].(time.Duration))
		}
		if x, ok := a[0].(int64); ok {
			y := a[1].(int64)
			switch name {
			case "add":
				return x + y
			case "subtract":
				return x - y
			case "multiply":
				return x * y
			case "divide": // a DOUBLE, IEEE at zero, as DuckDB
				return float64(x) / float64(y)
			case "integer_divide":
				if y == 0 {
					return nil
				}
				return x / y
			default:
				if y == 0 {
					return nil
				}
				return x % y
			}
		}
		x, y := a[0].(float64), a[1].(float64)
		switch name {
		case "add":
			return x + y
		case "subtract":
			return x - y
		case "multiply":
			return x * y
		case "divide":
			return x / y
		case "integer_divide":
			if y == 0 {
				return nil
			}
			return x / y
		default:
			return math.Mod(x, y) // NaN by zero, as DuckDB
		}
	case "negate":
		if x, ok := a[0].(int64); ok {
			return -x
		}
		return -a[0].(float64)
	case "abs":
		if x, ok := a[0].(int64); ok {
			if x < 0 {
				return -x
			}
			return x
		}
		return math.Abs(a[0].(float64))
	case "upper":
		return strings.ToUpper(a[0].(string))
	case "substr":
		r := []rune(a[0].(string))
		start := int(a[1].(int64)) - 1
		end := len(r)
		if len(a) > 2 {
			end = min(end, start+int(a[2].(int64)))
		}
		start = max(start, 0)
		if start >= end {
			return ""
		}
		return string(r[start:end])
	case "length":
		return int64(len([]rune(a[0].(string))))
	case "string_concat":
		s := ""
		for _, v := range a {
			s += v.(string)
		}
		return s
	case "date_part":
		return int64(a[1].(time.Time).Minute())
	}
	panic("refCall " + name)
}

func TestEvalMatchesRowByRowReference(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(42))
	rec, rows := randomBatch(t, mem, rng, 3000)
	defer rec.Release()
	r := expr.Builtins()
	a := &expr.Column{Index: 0, Name: "a", DataType: expr.Int64}
	b := &expr.Column{Index: 1, Name: "b", DataType: expr.Float64}
	s := &expr.Column{Index: 2, Name: "s", DataType: expr.String}
	ts := &expr.Column{Index: 3, Name: "ts", DataType: expr.Timestamp}
	flag := &expr.Column{Index: 4, Name: "flag", DataType: expr.Bool}
	i32 := &expr.Column{Index: 5, Name: "i32", DataType: arrow.PrimitiveTypes.Int32}
	must := func(e expr.Expr, err error) expr.Expr {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	call := func(name string, args ...expr.Expr) expr.Expr {
		c, err := r.NewCall(name, args...)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	gt := call("greater", a, lit(int64(2)))
	cases := []expr.Expr{
		call("add", a, b),
		call("multiply", a, i32),
		call("divide", a, call("subtract", a, lit(int64(3)))),
		call("divide", b, call("subtract", b, lit(1.5))),
		call("modulo", i32, a),
		call("less_equal", b, a),
		call("equal", s, lit("apple")),
		call("abs", call("negate", a)),
		must(expr.NewLogic(expr.OpAnd, gt, flag)),
		must(expr.NewLogic(expr.OpOr, flag, call("less", b, lit(0.0)), gt)),
		must(expr.NewNot(flag)),
		&expr.IsNull{Expr: s},
		&expr.IsNull{Expr: call("add", a, b), Negated: true},
		must(expr.NewIn(a, []expr.Expr{lit(int64(1)), lit(int64(5)), lit(int64(-3))}, false)),
		must(expr.NewIn(a, []expr.Expr{lit(int64(1)), lit(nil)}, true)),
		must(expr.NewIn(s, []expr.Expr{lit("date"), lit("banana")}, false)),
		must(expr.NewIn(b, []expr.Expr{a, lit(2.5)}, false)),
		must(expr.NewBetween(a, lit(int64(-2)), lit(int64(4)), false)),
		must(expr.NewBetween(b, a, lit(10.0), true)),
		must(expr.NewLike(s, lit("ap%"), false, false)),
		must(expr.NewLike(s, lit("%an%"), true, false)),
		must(expr.NewLike(s, lit("_a%e"), false, false)),
		must(expr.NewLike(s, call("string_concat", lit("%"), call("substr", s, lit(int64(3)))), false, false)),
		must(expr.NewLike(lit("banana"), call("string_concat", call("substr", s, lit(int64(1)), lit(int64(2))), lit("%")), true, false)),
		must(expr.NewCase([]expr.When{{Cond: gt, Then: lit("big")}, {Cond: flag, Then: s}}, lit("other"))),
		must(expr.NewCase([]expr.When{{Cond: call("less", a, lit(int64(0))), Then: b}}, nil)),
		call("coalesce", a, i32, lit(int64(-1))),
		call("string_concat", s, call("string_concat", lit("-"), call("upper", s))),
		call("integer_divide", a, call("subtract", a, lit(int64(3)))),
		call("length", s),
		call("greater", call("add", ts, lit(90*time.Minute)), lit(time.Date(2024, 1, 1, 2, 0, 0, 0, time.UTC))),
		call("date_part", lit("minute"), ts),
		call("add", lit(int64(1)), lit(int64(2))),
	}
	fns := functions.Builtins()
	c := functions.NewCtx(mem)
	for _, e := range cases {
		ev, err := Compile(e, rec.Schema(), fns)
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		got, err := ev.Eval(c, rec)
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		if got.Len() != len(rows) || !arrow.TypeEqual(got.DataType(), e.Type()) {
			t.Fatalf("%s: %d rows of %s", e, got.Len(), got.DataType())
		}
		bad := 0
		for i, row := range rows {
			want, have := ref(e, row), functions.ValueAt(got, i)
			if !same(have, want) {
				if bad < 3 {
					t.Errorf("%s row %d %v: got %v want %v", e, i, row, have, want)
				}
				bad++
			}
		}
		got.Release()
	}
}

func same(a, b any) bool {
	if x, ok := a.(float64); ok {
		if y, ok := b.(float64); ok {
			return x == y || math.Abs(x-y) <= 1e-9*math.Max(1, math.Abs(y)) || (math.IsNaN(x) && math.IsNaN(y))
		}
	}
	if x, ok := a.(time.Time); ok {
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	}
	return reflect.DeepEqual(a, b)
}

func TestFilterAndProject(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(7))
	rec, rows := randomBatch(t, mem, rng, 1000)
	defer rec.Release()
	r := expr.Builtins()
	a := &expr.Column{Index: 0, Name: "a", DataType: expr.Int64}
	s := &expr.Column{Index: 2, Name: "s", DataType: expr.String}
	cond, _ := r.NewCall("greater", a, lit(int64(0)))
	fns := functions.Builtins()
	c := functions.NewCtx(mem)
	p, err := NewPredicate(cond, rec.Schema(), fns)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Filter(c, rec)
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for _, row := range rows {
		if row[0] != nil && row[0].(int64) > 0 {
			want = append(want, row[0].(int64))
		}
	}
	if int(out.NumRows()) != len(want) {
		t.Fatalf("filter kept %d rows, want %d", out.NumRows(), len(want))
	}
	for i, w := range want {
		if got := functions.ValueAt(out.Column(0), i); got != w {
			t.Fatalf("row %d: %v want %v", i, got, w)
		}
	}
	double, _ := r.NewCall("multiply", a, lit(int64(2)))
	proj, err := NewProjection([]expr.Expr{s, double}, []string{"s", "a2"}, out.Schema(), fns)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := proj.Apply(c, out)
	out.Release()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Release()
	if pr.Schema().Field(1).Name != "a2" || functions.ValueAt(pr.Column(1), 0) != 2*want[0] {
		t.Fatalf("projection: %v", pr)
	}
	// A predicate that is never TRUE yields no record; one always TRUE passes rec through.
	never, _ := NewPredicate(lit(false), rec.Schema(), fns)
	if got, _ := never.Filter(c, rec); got != nil {
		t.Fatal("FALSE kept rows")
	}
	always, _ := NewPredicate(lit(true), rec.Schema(), fns)
	got, _ := always.Filter(c, rec)
	if got != rec {
		t.Fatal("TRUE copied the batch")
	}
	got.Release()
	if _, err := Compile(a, arrow.NewSchema([]arrow.Field{{Name: "a", Type: expr.String}}, nil), fns); err == nil {
		t.Fatal("column type mismatch accepted")
	}
}
