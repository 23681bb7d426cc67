package functions

import (
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// string_agg_sorted is what string_agg(s, sep ORDER BY k) binds to, over
// sort_key values, but a user can call it by name over any strings: values
// too short to carry a length, or whose last 4 bytes state more than they
// hold, are their own value (it panicked, slicing at a negative offset,
// after the whole group had been read), and a real sort_key still gives
// back the value it carries.
func TestSortedStringAggOverAnyString(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	impl := Builtins()
	keyed, err := callString(t, NewCtx(mem), "sort_key", "carried", "AL", "k")
	if err != nil {
		t.Fatal(err)
	}
	key := keyed.(*array.String).Value(0)
	keyed.Release()
	b := array.NewStringBuilder(mem)
	b.AppendValues([]string{"xx", strings.Repeat("y", 1000), key, "zzzz"}, nil)
	col := b.NewArray()
	defer col.Release()
	acc, err := impl.NewAccumulator("string_agg_sorted", false, arrow.BinaryTypes.String, arrow.BinaryTypes.String, ",")
	if err != nil {
		t.Fatal(err)
	}
	acc.Grow(1)
	acc.Update(make([]uint32, col.Len()), col, 0)
	got := acc.Finish(mem, []uint32{0})
	defer got.Release()
	want := "carried,xx," + strings.Repeat("y", 1000) + ",zzzz"
	if s := got.(*array.String).Value(0); s != want {
		t.Errorf("got %.40q..., want %.40q...", s, want)
	}
}
