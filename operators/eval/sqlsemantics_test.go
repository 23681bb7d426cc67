package eval

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// semanticsBatch: d DOUBLE and i BIGINT, one row per case, the last row NULL.
func semanticsBatch(t *testing.T, mem memory.Allocator, ds []any, is []any) arrow.Record {
	t.Helper()
	da, err := functions.ArrayOf(mem, expr.Float64, ds)
	if err != nil {
		t.Fatal(err)
	}
	defer da.Release()
	ia, err := functions.ArrayOf(mem, expr.Int64, is)
	if err != nil {
		t.Fatal(err)
	}
	defer ia.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "d", Type: expr.Float64, Nullable: true}, {Name: "i", Type: expr.Int64, Nullable: true}}, nil)
	return array.NewRecord(schema, []arrow.Array{da, ia}, int64(len(ds)))
}

func evalValues(t *testing.T, mem memory.Allocator, e expr.Expr, rec arrow.Record) ([]any, error) {
	t.Helper()
	ev, err := Compile(e, rec.Schema(), functions.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	a, err := ev.Eval(functions.NewCtx(mem), rec)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	out := make([]any, a.Len())
	for k := range out {
		out[k] = functions.ValueAt(a, k)
	}
	return out, nil
}

// CAST of a DOUBLE column to an integer rounds half to even, as DuckDB's
// does (a literal such as 2.5, a DECIMAL to DuckDB, rounds half away from
// zero); a value the type cannot hold fails naming the CAST, on columns and
// on constants alike (arrow's scalar cast would have wrapped).
func TestCastDoubleToIntegerRoundsAndChecksRange(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := semanticsBatch(t, mem, []any{2.5, -2.5, 1.4, -1.6, 2147483647.49, -2147483648.4, nil}, []any{int64(1), int64(2), int64(3), int64(4), int64(5), int64(6), nil})
	defer rec.Release()
	d := &expr.Column{Index: 0, Name: "d", DataType: expr.Float64}
	got, err := evalValues(t, mem, &expr.Cast{Expr: d, To: arrow.PrimitiveTypes.Int32}, rec)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{int64(2), int64(-2), int64(1), int64(-2), int64(math.MaxInt32), int64(math.MinInt32), nil}
	for k := range want {
		if got[k] != want[k] {
			t.Fatalf("CAST(d AS INT) = %v, want %v", got, want)
		}
	}
	for _, c := range []struct {
		e  expr.Expr
		to arrow.DataType
	}{
		{lit(1e12), arrow.PrimitiveTypes.Int32},
		{lit(2147483647.5), arrow.PrimitiveTypes.Int32},
		{lit(math.NaN()), expr.Int64},
		{lit(9.3e18), expr.Int64},
		{&expr.Column{Index: 1, Name: "i", DataType: expr.Int64}, arrow.PrimitiveTypes.Int8},
	} {
		cast := &expr.Cast{Expr: c.e, To: c.to}
		_, err := evalValues(t, mem, cast, rec)
		var xe *ExprError
		if c.to.ID() == arrow.INT8 {
			// i holds 1..6: in range for TINYINT; push one out of it.
			big := &expr.Call{Func: "multiply", Args: []expr.Expr{c.e, lit(int64(100))}, DataType: expr.Int64}
			_, err = evalValues(t, mem, &expr.Cast{Expr: big, To: c.to}, rec)
			cast = &expr.Cast{Expr: big, To: c.to}
		}
		if !errors.Is(err, ErrOutOfRange) || !errors.As(err, &xe) || xe.Expr != cast.String() {
			t.Errorf("%s: got %v, want ErrOutOfRange naming it", cast, err)
		}
	}
	// A literal (DuckDB's DECIMAL) rounds half away from zero.
	if got, err := evalValues(t, mem, &expr.Cast{Expr: lit(-2.5), To: expr.Int64}, rec); err != nil || got[0] != int64(-3) {
		t.Fatalf("CAST(-2.5 AS BIGINT) = %v, %v", got, err)
	}
}

// Integer + - *, unary minus and MIN / -1 fail on overflow, naming the expression,
// instead of wrapping around.
func TestIntegerOverflowIsAnError(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := semanticsBatch(t, mem, []any{1.0, nil}, []any{int64(math.MaxInt64), nil})
	defer rec.Release()
	r := expr.Builtins()
	i := &expr.Column{Index: 1, Name: "i", DataType: expr.Int64}
	minusOne, _ := r.NewCall("negate", i)
	min, _ := r.NewCall("subtract", minusOne, lit(int64(1)))
	for _, c := range []struct {
		fn   string
		args []expr.Expr
	}{
		{"add", []expr.Expr{i, lit(int64(1))}},
		{"subtract", []expr.Expr{min, lit(int64(1))}},
		{"multiply", []expr.Expr{i, lit(int64(2))}},
		{"negate", []expr.Expr{min}},
		{"add", []expr.Expr{lit(int64(math.MaxInt64)), lit(int64(1))}},
		{"integer_divide", []expr.Expr{min, lit(int64(-1))}},
	} {
		call, err := r.NewCall(c.fn, c.args...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = evalValues(t, mem, call, rec)
		var xe *ExprError
		if !errors.Is(err, functions.ErrOverflow) || !errors.As(err, &xe) || xe.Expr != call.String() {
			t.Errorf("%s: got %v, want ErrOverflow naming it", call, err)
		}
	}
	// In range it still computes.
	ok, _ := r.NewCall("subtract", i, lit(int64(1)))
	if got, err := evalValues(t, mem, ok, rec); err != nil || got[0] != int64(math.MaxInt64-1) || got[1] != nil {
		t.Fatalf("i - 1 = %v, %v", got, err)
	}
}

// A comparison (or arithmetic) with NULL is NULL, NULL = NULL included.
func TestComparisonWithNullIsNull(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := semanticsBatch(t, mem, []any{1.0, nil}, []any{int64(1), nil})
	defer rec.Release()
	r := expr.Builtins()
	d := &expr.Column{Index: 0, Name: "d", DataType: expr.Float64}
	for _, c := range []struct {
		fn   string
		args []expr.Expr
	}{
		{"equal", []expr.Expr{lit(nil), lit(nil)}},
		{"not_equal", []expr.Expr{d, lit(nil)}},
		{"less", []expr.Expr{lit(nil), d}},
		{"greater_equal", []expr.Expr{lit(nil), lit(int64(1))}},
		{"add", []expr.Expr{lit(nil), d}},
		{"multiply", []expr.Expr{lit(nil), lit(nil)}},
	} {
		call, err := r.NewCall(c.fn, c.args...)
		if err != nil {
			t.Fatalf("%s does not bind: %v", c.fn, err)
		}
		got, err := evalValues(t, mem, call, rec)
		if err != nil || len(got) != 2 || got[0] != nil || got[1] != nil {
			t.Errorf("%s = %v, %v; want NULL, NULL", call, got, err)
		}
	}
}

// WHERE NULL binds (a NULL stands for any type) and keeps no row.
func TestNullPredicateKeepsNoRow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := semanticsBatch(t, mem, []any{1.0, nil}, []any{int64(1), nil})
	defer rec.Release()
	p, err := NewPredicate(lit(nil), rec.Schema(), functions.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Filter(functions.NewCtx(mem), rec)
	if err != nil || got != nil {
		t.Fatalf("WHERE NULL kept %v, %v", got, err)
	}
}

// TRY_CAST makes the values that do not convert NULL, where CAST fails the
// query; the rows that convert keep their values.
func TestTryCastNullsWhatDoesNotConvert(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := semanticsBatch(t, mem, []any{2.5, 3e12, -1.0, nil}, []any{int64(1), int64(2), int64(3), nil})
	defer rec.Release()
	d := &expr.Column{Index: 0, Name: "d", DataType: expr.Float64}
	if _, err := evalValues(t, mem, &expr.Cast{Expr: d, To: arrow.PrimitiveTypes.Int32}, rec); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("CAST: %v", err)
	}
	got, err := evalValues(t, mem, &expr.Cast{Expr: d, To: arrow.PrimitiveTypes.Int32, Try: true}, rec)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{int64(2), nil, int64(-1), nil}
	for k := range want {
		if got[k] != want[k] {
			t.Fatalf("TRY_CAST row %d: %v, want %v (all: %v)", k, got[k], want[k], got)
		}
	}
	s, _ := expr.NewLiteral("12x")
	got, err = evalValues(t, mem, &expr.Cast{Expr: s, To: expr.Int64, Try: true}, rec)
	if err != nil || got[0] != nil {
		t.Fatalf("TRY_CAST('12x' AS BIGINT): %v %v", got, err)
	}
}

// Casts between text and DOUBLE or TIMESTAMP read and write DuckDB's
// spellings: 17.0 and 2024-01-02 03:04:05.5 out, 'YYYY-MM-DD[ HH:MM:SS]' in.
func TestCastTextAsDuckDB(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := semanticsBatch(t, mem, []any{17.0, -0.5, 1e20, nil}, []any{int64(1), int64(2), int64(3), nil})
	defer rec.Release()
	d := &expr.Column{Index: 0, Name: "d", DataType: expr.Float64}
	got, err := evalValues(t, mem, &expr.Cast{Expr: d, To: expr.String}, rec)
	if err != nil {
		t.Fatal(err)
	}
	if want := []any{"17.0", "-0.5", "1e+20", nil}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("DOUBLE to VARCHAR: %v, want %v", got, want)
	}
	for text, want := range map[string]string{
		"2024-01-02":                 "2024-01-02 00:00:00",
		"2024-01-02 03:04:05.5":      "2024-01-02 03:04:05.5",
		"2024-01-02T03:04:05.000001": "2024-01-02 03:04:05.000001",
		"2024-01-02 03:04":           "2024-01-02 03:04:00",
	} {
		ts := &expr.Cast{Expr: lit(text), To: expr.Timestamp}
		got, err := evalValues(t, mem, &expr.Cast{Expr: ts, To: expr.String}, rec)
		if err != nil || got[0] != want {
			t.Errorf("%q::TIMESTAMP::VARCHAR = %v, %v; want %s", text, got[0], err, want)
		}
	}
	bad := &expr.Cast{Expr: lit("2024-13-45"), To: expr.Timestamp}
	if _, err := evalValues(t, mem, bad, rec); !errors.Is(err, ErrConversion) {
		t.Fatalf("bad timestamp text: %v, want ErrConversion", err)
	}
	bad.Try = true
	if got, err := evalValues(t, mem, bad, rec); err != nil || got[0] != nil {
		t.Fatalf("TRY_CAST of bad timestamp text: %v, %v", got, err)
	}
}
