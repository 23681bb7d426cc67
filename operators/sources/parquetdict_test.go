package sources

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// unpackStrings gives every row its dictionary value, whether the values all
// fit a word (stored a word at a time, the last rows copied), some are
// longer, rows are NULL, or the indices are a slice; nothing leaks.
func TestUnpackStringsGivesEachRowItsValue(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, tc := range []struct {
		name  string
		dict  []string
		nulls bool
		slice bool
	}{
		{"short", []string{"", "A", "MAIL", "TRUCK", "REG AIR!", "é"}, false, false},
		{"short, sliced", []string{"N", "R", "AF"}, false, true},
		{"long", []string{"1-URGENT", "a value longer than a word", "x"}, false, false},
		{"nulls", []string{"F", "O"}, true, false},
	} {
		db := array.NewStringBuilder(mem)
		db.AppendValues(tc.dict, nil)
		dict := db.NewArray()
		db.Release()
		ib := array.NewInt32Builder(mem)
		const n = 1001
		for i := range n {
			if tc.nulls && i%13 == 3 {
				ib.AppendNull()
				continue
			}
			ib.Append(int32((i * 7) % len(tc.dict)))
		}
		idx := ib.NewArray()
		ib.Release()
		if tc.slice {
			s := array.NewSlice(idx, 5, n-2)
			idx.Release()
			idx = s
		}
		d := array.NewDictionaryArray(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, idx, dict)
		idx.Release()
		dict.Release()
		out, valid := unpackStrings(mem, d)
		if !valid {
			t.Fatalf("%s: UTF-8 values reported invalid", tc.name)
		}
		s := out.(*array.String)
		if s.Len() != d.Len() {
			t.Fatalf("%s: %d rows, want %d", tc.name, s.Len(), d.Len())
		}
		vals := d.Dictionary().(*array.String)
		for i := range d.Len() {
			if d.IsNull(i) != s.IsNull(i) {
				t.Fatalf("%s: row %d: null %v, want %v", tc.name, i, s.IsNull(i), d.IsNull(i))
			}
			if d.IsValid(i) && s.Value(i) != vals.Value(d.GetValueIndex(i)) {
				t.Fatalf("%s: row %d: %q, want %q", tc.name, i, s.Value(i), vals.Value(d.GetValueIndex(i)))
			}
		}
		out.Release()
		d.Release()
	}
}
