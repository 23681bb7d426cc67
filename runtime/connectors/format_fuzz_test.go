package connectors

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/sources"
)

// FuzzDecode: whatever arrives on a subject, every format decodes it into
// rows or bad-message errors: no panic, no leak.
func FuzzDecode(f *testing.F) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.BinaryTypes.String}}, nil))
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"x", "y"}, nil)
	rec := b.NewRecord()
	ipc, err := ipcBytes(rec)
	if err != nil {
		f.Fatal(err)
	}
	rec.Release()
	b.Release()
	for _, seed := range [][]byte{ipc, ipc[:len(ipc)/2], []byte(`{"a": 1, "b": "x"}`), []byte("{\"a\": 1}\n{\"a\": \"z\"}\n"), []byte("1,x\n2,y"), []byte(`1,"x`), nil} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		for _, fm := range formats() {
			rb := sources.NewRowBuilder(mem, schema)
			recs, _ := fm.decode(mem, schema, data, rb)
			for _, r := range recs {
				if r.NumCols() != 2 {
					t.Fatalf("%s: %d columns", fm.name, r.NumCols())
				}
				r.Release()
			}
			if r := rb.Finish(); r != nil {
				r.Release()
			}
		}
		mem.AssertSize(t, 0)
	})
}
