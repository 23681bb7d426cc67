package sources

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
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

// A column named in ParquetScan.Codes comes out as its dictionary codes
// from a file of many row groups whose dictionaries differ (values first
// seen in another order, one with a value that is not UTF-8): each batch
// holds one row group's rows with that group's dictionary, the rows are
// the values a plain read gives, a batch whose dictionary has a value that
// is not UTF-8 is unpacked so that the row is skipped as before, and the
// batch's schema says which. With one core too (one row group at a time);
// nothing leaks.
func TestParquetCodesKeepEachRowGroupsDictionary(t *testing.T) {
	path, schema := manyGroups(t, 2000)
	plainMem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer plainMem.AssertSize(t, 0)
	plain, err := OpenParquet(path, schema, 30, plainMem, Skip, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := readAll(t, plainMem, plain)
	plain.Close()
	for _, procs := range []int{4, 1} {
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			r, err := OpenParquetScan(path, schema, 30, mem, Skip, nil, ParquetScan{Codes: []string{"s"}})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.Schema().Field(1).Type.ID() != arrow.STRING {
				t.Fatalf("reader's schema says %s", r.Schema().Field(1).Type)
			}
			var got [][]any
			coded, unpacked := 0, 0
			dicts := map[string]bool{}
			for {
				rec, err := r.Next(mem)
				if err != nil {
					t.Fatal(err)
				}
				if rec == nil {
					break
				}
				if !arrow.TypeEqual(rec.Schema().Field(1).Type, rec.Column(1).DataType()) {
					t.Fatalf("batch schema %s, column %s", rec.Schema().Field(1).Type, rec.Column(1).DataType())
				}
				first := rec.Column(0).(*array.Int64).Value(0)
				last := rec.Column(0).(*array.Int64).Value(int(rec.NumRows()) - 1)
				if first/100 != last/100 {
					t.Fatalf("a batch spans row groups: ids %d to %d", first, last)
				}
				d, isDict := rec.Column(1).(*array.Dictionary)
				if isDict {
					coded++
					dicts[fmt.Sprint(d.Dictionary())] = true
				} else {
					unpacked++
				}
				for i := range int(rec.NumRows()) {
					var s any
					switch {
					case rec.Column(1).IsNull(i):
					case isDict:
						s = d.Dictionary().(*array.String).Value(d.GetValueIndex(i))
					default:
						s = rec.Column(1).(*array.String).Value(i)
					}
					got = append(got, []any{rec.Column(0).(*array.Int64).Value(i), s, rec.Column(2).(*array.Float64).Value(i)})
				}
				rec.Release()
			}
			if coded == 0 || unpacked == 0 || len(dicts) < 2 {
				t.Fatalf("%d cores: %d batches of codes (%d dictionaries), %d unpacked", procs, coded, len(dicts), unpacked)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%d cores: %d rows, want %d", procs, len(got), len(want))
			}
		}()
	}
}

// A file of one row group is read by one reader, which keeps the codes too,
// batch after batch of the group's one dictionary.
func TestParquetCodesOfOneRowGroup(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	for i := range 300 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("k", i%5))
	}
	rec := b.NewRecord()
	b.Release()
	path := filepath.Join(t.TempDir(), "one.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(1000)), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err == nil {
		err = w.Write(rec)
	}
	if err == nil {
		err = w.Close()
	}
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	r, err := OpenParquetScan(path, schema, 64, mem, Fail, nil, ParquetScan{Codes: []string{"s"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, seq := r.(*recordReader); !seq {
		t.Fatalf("one row group read by %T", r)
	}
	rows := 0
	for {
		rec, err := r.Next(mem)
		if err != nil {
			t.Fatal(err)
		}
		if rec == nil {
			break
		}
		d, ok := rec.Column(1).(*array.Dictionary)
		if !ok {
			t.Fatalf("batch at row %d: %s", rows, rec.Column(1).DataType())
		}
		for i := range int(rec.NumRows()) {
			if got := d.Dictionary().(*array.String).Value(d.GetValueIndex(i)); got != fmt.Sprint("k", (rows+i)%5) {
				t.Fatalf("row %d: %q", rows+i, got)
			}
		}
		rows += int(rec.NumRows())
		rec.Release()
	}
	if rows != 300 {
		t.Fatalf("%d rows", rows)
	}
}
