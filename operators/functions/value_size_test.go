package functions

import (
	"errors"
	"runtime"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/arrow/scalar"

	"github.com/tierflow/tierflow/dataflow"
)

// callString calls the string function name on scalar arguments (strings
// and int64s) for one row.
func callString(t *testing.T, c *Ctx, name string, args ...any) (arrow.Array, error) {
	t.Helper()
	fn, err := Builtins().Scalar(name)
	if err != nil {
		t.Fatal(err)
	}
	ds := make([]compute.Datum, len(args))
	for i, a := range args {
		switch a := a.(type) {
		case string:
			ds[i] = compute.NewDatum(scalar.NewStringScalar(a))
		case int64:
			ds[i] = compute.NewDatum(scalar.NewInt64Scalar(a))
		}
	}
	return fn(c, arrow.BinaryTypes.String, ds, 1)
}

// allocated is the Go heap allocated while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestStringFunctionsSizeTheirValueFirst: repeat, lpad and rpad know a
// value's bytes before building it. One that no string column can hold
// (offsets are 32-bit) is an error, with nothing allocated for it (before,
// repeat('ab', 2e9) asked Go for 4 GB and lpad for 4 bytes a character);
// one past the query's memory is refused by its budget before Go memory is
// spent on it (a worker's queries' strings grew the process outside every
// budget: repeat('x', 3e8) took a run to 1.4 GB resident); and the values
// themselves, multi-byte fills included, are what they were.
func TestStringFunctionsSizeTheirValueFirst(t *testing.T) {
	c := NewCtx(memory.NewGoAllocator())
	for _, call := range [][]any{
		{"repeat", "ab", int64(2_000_000_000)},
		{"repeat", "x", int64(1) << 62},
		{"lpad", "x", int64(3_000_000_000), "ab"},
		{"rpad", "x", int64(1) << 62, "é"},
	} {
		var err error
		got := allocated(func() { _, err = callString(t, c, call[0].(string), call[1:]...) })
		if !errors.Is(err, ErrValueTooLarge) {
			t.Errorf("%v: %v, want ErrValueTooLarge", call, err)
		}
		if got > 1<<20 {
			t.Errorf("%v: allocated %s refusing it", call, dataflow.Bytes(int64(got)))
		}
	}

	budget := dataflow.NewMemory("query q", 1<<20, nil)
	bc := NewCtx(budget.Allocator(memory.NewGoAllocator()))
	var refused any
	got := allocated(func() {
		defer func() { refused = recover() }()
		_, _ = callString(t, bc, "repeat", "x", int64(50_000_000))
	})
	var le *dataflow.LimitError
	if err, ok := refused.(error); !ok || !errors.As(err, &le) {
		t.Errorf("repeat('x', 5e7) in a 1 MiB budget: %v, want its budget's refusal", refused)
	}
	if got > 8<<20 {
		t.Errorf("repeat('x', 5e7) in a 1 MiB budget allocated %s before it was refused", dataflow.Bytes(int64(got)))
	}

	for _, tc := range []struct {
		call []any
		want string
	}{
		{[]any{"repeat", "ab", int64(3)}, "ababab"},
		{[]any{"lpad", "é", int64(4), "ab"}, "abaé"},
		{[]any{"rpad", "ab", int64(5), "xy"}, "abxyx"},
		{[]any{"lpad", "héllo", int64(3), "*"}, "hél"},
		{[]any{"rpad", "ab", int64(4), "ü"}, "abüü"},
		{[]any{"lpad", "ab", int64(5), ""}, "ab"},
	} {
		a, err := callString(t, c, tc.call[0].(string), tc.call[1:]...)
		if err != nil {
			t.Errorf("%v: %v", tc.call, err)
			continue
		}
		if s := a.(*array.String).Value(0); s != tc.want {
			t.Errorf("%v = %q, want %q", tc.call, s, tc.want)
		}
		a.Release()
	}
}

// TestComputeAtTheLimitDoesNotPanic: Arrow's compute kernels allocate on a
// goroutine of their own, where a budget's refusal (a panic) ended the
// process: a worker's query evaluating a projection at its limit took the
// worker down (a fresh clone's make test, runtime/cluster). Through Ctx the
// kernels charge the budget without being refused, and the budget says it
// is over its limit, for the worker to fail the query.
func TestComputeAtTheLimitDoesNotPanic(t *testing.T) {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range 100_000 {
		b.Append(int64(i))
	}
	a := b.NewArray()
	defer a.Release()
	budget := dataflow.NewMemory("query q", 4<<10, nil)
	c := NewCtx(budget.Allocator(memory.NewGoAllocator()))
	out, err := compute.CallFunction(c.Context(), "add", nil, compute.NewDatum(a), compute.NewDatum(a))
	if err != nil {
		t.Fatal(err)
	}
	out.Release()
	select {
	case <-budget.OverLimit():
	default:
		t.Errorf("an 800 KB kernel output in a 4 KiB budget: the budget holds %d bytes and does not say it is over its limit", budget.Used())
	}
}
