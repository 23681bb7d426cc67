package functions

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/arrow/scalar"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/internal/testenv"
	"github.com/tierflow/tierflow/operators/pixels/pixelstest"
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

// stringCall is a call of a string function and the value it gives.
type stringCall struct {
	call []any
	want string
}

// checkStrings makes each call and checks its value.
func checkStrings(t *testing.T, c *Ctx, calls []stringCall) {
	t.Helper()
	for _, tc := range calls {
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
		got := testenv.Allocated(func() { _, err = callString(t, c, call[0].(string), call[1:]...) })
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
	got := testenv.Allocated(func() {
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

	checkStrings(t, c, []stringCall{
		{[]any{"repeat", "ab", int64(3)}, "ababab"},
		{[]any{"lpad", "é", int64(4), "ab"}, "abaé"},
		{[]any{"rpad", "ab", int64(5), "xy"}, "abxyx"},
		{[]any{"lpad", "héllo", int64(3), "*"}, "hél"},
		{[]any{"rpad", "ab", int64(4), "ü"}, "abüü"},
		{[]any{"lpad", "ab", int64(5), ""}, "ab"},
	})
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

// TestStringsThatGrowAreSizedFirst: replace and regexp_replace can make a
// value far larger than their arguments (every character of 50,000 made
// 50,000 bytes), and split_part, split_index, substr, left, right and
// reverse held a copy of their whole input per field or per character. Now
// the growing ones know their value's bytes before building it (past a
// column: an error; past the query's memory: its budget's refusal; nothing
// built either way), the others walk their input, and every value is what
// it was.
func TestStringsThatGrowAreSizedFirst(t *testing.T) {
	a50k, b50k, refs := strings.Repeat("a", 50_000), strings.Repeat("b", 50_000), strings.Repeat(`\0`, 50_000)
	c := NewCtx(memory.NewGoAllocator())
	for _, call := range [][]any{
		{"replace", a50k, "a", b50k},
		{"replace", a50k, "", b50k},
		{"regexp_replace", a50k, "a", b50k, "g"},
		{"regexp_replace", a50k, ".*", refs},
		{"regexp_replace", a50k, "(a)", refs, "g"},
	} {
		var err error
		got := testenv.Allocated(func() { _, err = callString(t, c, call[0].(string), call[1:]...) })
		if !errors.Is(err, ErrValueTooLarge) {
			t.Errorf("%s %q: %v, want ErrValueTooLarge", call[0], call[2], err)
		}
		if got > 16<<20 { // the regular expression's own work on 50 KB aside
			t.Errorf("%s %q: allocated %s refusing a value of gigabytes", call[0], call[2], dataflow.Bytes(int64(got)))
		}
	}

	a2k, b2k := strings.Repeat("a", 2000), strings.Repeat("b", 2000)
	for _, call := range [][]any{
		{"replace", a2k, "a", b2k},
		{"regexp_replace", a2k, "a", b2k, "g"},
		{"regexp_replace", a2k, "a*", strings.Repeat(`\0`, 2000)},
	} {
		budget := dataflow.NewMemory("query q", 1<<20, nil)
		bc := NewCtx(budget.Allocator(memory.NewGoAllocator()))
		var refused any
		got := testenv.Allocated(func() {
			defer func() { refused = recover() }()
			_, _ = callString(t, bc, call[0].(string), call[1:]...)
		})
		var le *dataflow.LimitError
		if err, ok := refused.(error); !ok || !errors.As(err, &le) {
			t.Errorf("%s %q of 4 MB in a 1 MiB budget: %v, want its budget's refusal", call[0], call[2], refused)
		}
		if got > 1<<20 {
			t.Errorf("%s %q of 4 MB in a 1 MiB budget allocated %s before it was refused", call[0], call[2], dataflow.Bytes(int64(got)))
		}
	}

	a4m := strings.Repeat("a", 4<<20)
	// What reading the argument costs (its scalar, broadcast: a call whose
	// value is empty), then each call: that, three times its value (a
	// builder grows by doubling) and a little.
	var base uint64
	for range 2 {
		base = testenv.Allocated(func() {
			a, _ := callString(t, c, "split_part", a4m, "x", int64(2))
			a.Release()
		})
	}
	for _, call := range [][]any{
		{"split_part", a4m, "a", int64(2)},
		{"split_part", a4m, "", int64(-1)},
		{"split_index", a4m, "a", int64(3)},
		{"substr", a4m, int64(2), int64(3)},
		{"left", a4m, int64(-2)},
		{"right", a4m, int64(2)},
		{"reverse", a4m},
	} {
		var err error
		var a arrow.Array
		got := testenv.Allocated(func() { a, err = callString(t, c, call[0].(string), call[1:]...) })
		if err != nil {
			t.Fatalf("%s: %v", call[0], err)
		}
		value := uint64(len(a.(*array.String).Value(0)))
		a.Release()
		if limit := base + 3*value + 1<<20; got > limit {
			t.Errorf("%s of a 4 MiB string allocated %s for a value of %s (its argument %s)", call[0], dataflow.Bytes(int64(got)), dataflow.Bytes(int64(value)), dataflow.Bytes(int64(base)))
		}
	}

	checkStrings(t, c, []stringCall{
		{[]any{"replace", "abcabc", "b", "XY"}, "aXYcaXYc"},
		{[]any{"replace", "héé", "é", "e"}, "hee"},
		{[]any{"replace", "ab", "", "-"}, "-a-b-"},
		{[]any{"regexp_replace", "abcabc", "(b)(c)", `\2\1\\`, "g"}, `acb\acb\`},
		{[]any{"regexp_replace", "abcabc", "(b)(c)", `[\0\7]`}, "a[bc]abc"},
		{[]any{"regexp_replace", "abc", "b", "$x"}, "a$xc"},
		{[]any{"regexp_replace", "", "x*", "yy", "g"}, "yy"},
		{[]any{"split_part", "a,b,,c", ",", int64(-2)}, ""},
		{[]any{"split_part", "a,b,,c", ",", int64(4)}, "c"},
		{[]any{"split_part", "a,b,,c", ",", int64(-4)}, "a"},
		{[]any{"split_part", "a,b", ",", int64(3)}, ""},
		{[]any{"split_part", "héllo", "", int64(2)}, "é"},
		{[]any{"split_part", "", "", int64(1)}, ""},
		{[]any{"split_index", "a::b::c", "::", int64(2)}, "c"},
		{[]any{"substr", "héllo", int64(2), int64(3)}, "éll"},
		{[]any{"substr", "héllo", int64(-3)}, "llo"},
		{[]any{"left", "héllo", int64(-2)}, "hél"},
		{[]any{"right", "héllo", int64(2)}, "lo"},
		{[]any{"right", "héllo", int64(-1)}, "éllo"},
		{[]any{"reverse", "héllo"}, "olléh"},
		{[]any{"lpad", "héllo", int64(2), "*"}, "hé"},
	})
	if a, err := callString(t, c, "split_index", "a,b", ",", int64(2)); err != nil || !a.IsNull(0) {
		t.Errorf("split_index past the last field: %v %v, want NULL", a, err)
	}
}

// crop_image decodes its frame within the query's budget: a frame whose
// header states more pixels than the budget holds fails the call for its
// memory, with nothing decoded (a PNG of 73 bytes stating 8000x8000 is 256
// MB of pixels), while bytes that are not an image are a NULL row, and a
// frame that fits is cut and its charge given back.
func TestCropImageDecodesWithinTheBudget(t *testing.T) {
	crop := func(c *Ctx, img []byte) (arrow.Array, error) {
		fn, err := Builtins().Scalar("crop_image")
		if err != nil {
			t.Fatal(err)
		}
		ds := []compute.Datum{compute.NewDatum(scalar.NewBinaryScalar(memory.NewBufferBytes(img), arrow.BinaryTypes.Binary))}
		for _, v := range []float64{0, 0, 2, 2} {
			ds = append(ds, compute.NewDatum(scalar.NewFloat64Scalar(v)))
		}
		return fn(c, arrow.BinaryTypes.Binary, ds, 1)
	}
	budget := dataflow.NewMemory("query q", 16<<20, nil)
	c := NewCtx(budget.Allocator(memory.NewGoAllocator()))
	var err error
	got := testenv.Allocated(func() { _, err = crop(c, pixelstest.StatingPNG(t, 8000, 8000)) })
	if !errors.Is(err, dataflow.ErrMemory) {
		t.Errorf("crop_image of a frame stating 8000x8000 in a 16 MiB budget: %v, want its budget's refusal", err)
	}
	if got > 4<<20 {
		t.Errorf("crop_image refused a frame after allocating %s", dataflow.Bytes(int64(got)))
	}
	a, err := crop(c, []byte("not an image"))
	if err != nil || !a.IsNull(0) {
		t.Errorf("crop_image of bytes that are not an image: %v, %v, want NULL", a, err)
	}
	a.Release()
	var frame bytes.Buffer
	if err := png.Encode(&frame, image.NewNRGBA(image.Rect(0, 0, 8, 8))); err != nil {
		t.Fatal(err)
	}
	a, err = crop(c, frame.Bytes())
	if err != nil || a.IsNull(0) {
		t.Fatalf("crop_image of an 8x8 frame: %v, %v", a, err)
	}
	a.Release()
	if used := budget.Used(); used != 0 {
		t.Errorf("after the calls the budget holds %d bytes", used)
	}
}

// string_agg's result is a copy of its whole state: it is made room for in
// the query's budget before it is joined (it was joined in Go memory
// first, past any limit), with and without ORDER BY.
func TestStringAggJoinsWithinTheBudget(t *testing.T) {
	b := array.NewStringBuilder(memory.DefaultAllocator)
	for range 64 {
		b.Append(strings.Repeat("x", 64<<10))
	}
	col := b.NewArray()
	defer col.Release()
	for _, name := range []string{"string_agg", "string_agg_sorted"} {
		acc, err := Builtins().NewAccumulator(name, false, arrow.BinaryTypes.String, arrow.BinaryTypes.String, ",")
		if err != nil {
			t.Fatal(err)
		}
		acc.Grow(1)
		acc.Update(make([]uint32, col.Len()), col, 0)
		budget := dataflow.NewMemory("query q", 1<<20, nil)
		var refused any
		got := testenv.Allocated(func() {
			defer func() { refused = recover() }()
			acc.Finish(budget.Allocator(memory.NewGoAllocator()), []uint32{0})
		})
		var le *dataflow.LimitError
		if err, ok := refused.(error); !ok || !errors.As(err, &le) {
			t.Errorf("%s of 4 MiB in a 1 MiB budget: %v, want its budget's refusal", name, refused)
		}
		if got > 1<<20 {
			t.Errorf("%s of 4 MiB in a 1 MiB budget allocated %s before it was refused", name, dataflow.Bytes(int64(got)))
		}
		a := acc.Finish(memory.NewGoAllocator(), []uint32{0})
		if n := a.(*array.String).ValueLen(0); n != 64*(64<<10)+63 {
			t.Errorf("%s: %d bytes, want every part and separator", name, n)
		}
		a.Release()
	}
}

// A compiled pattern costs about 150 bytes of Go memory a byte of its text,
// none of it charged: a regexp function over a column of distinct 20 KB
// patterns kept every one compiled for its batch (4,096 rows: 6.5 GB), and
// one pattern of 3 MB took 500 MB to compile. A pattern past
// MaxPatternBytes is refused as a bad argument before it is compiled, and
// the call's cache keeps at most PatternCacheBytes of pattern text.
func TestRegexpPatternsAreBounded(t *testing.T) {
	c := NewCtx(memory.NewGoAllocator())
	var err error
	got := testenv.Allocated(func() { _, err = callString(t, c, "regexp_replace", "a", strings.Repeat("a", 3<<20), "b") })
	if !errors.Is(err, ErrBadArgument) || !strings.Contains(err.Error(), "more than 64.0 KiB") {
		t.Errorf("a 3 MiB pattern: %v, want refused for its size", err)
	}
	if got > 16<<20 {
		t.Errorf("refusing a 3 MiB pattern allocated %s", dataflow.Bytes(int64(got)))
	}
	rs := &regexps{fn: "regexp_matches"}
	for i := range 60 { // 1.2 MB of patterns, past the cache's bound several times
		p := strings.Repeat("a", 20<<10) + fmt.Sprint(i)
		re := rs.get(p, "")
		if re == nil || re.MatchString("a") { // (a long text would take the NFA pattern x text steps)
			t.Fatalf("pattern %d: %v", i, rs.err)
		}
		if held, bytes := rs.cache.Held(); held > PatternCacheEntries || bytes > PatternCacheBytes {
			t.Fatalf("after %d patterns of 20 KB the cache holds %d (%s)", i+1, held, dataflow.Bytes(int64(bytes)))
		}
	}
	if a, b := rs.get("same", "i"), rs.get("same", "i"); a != b {
		t.Error("a repeated pattern was compiled again")
	}
}
