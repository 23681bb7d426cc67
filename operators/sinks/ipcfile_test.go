package sinks

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// The records emitted come back from the file in order; an error from the
// producer comes back out, and every emitted record is released.
func TestWriteIPCFile(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rec := func(vals ...int64) arrow.Record {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		b.AppendValues(vals, nil)
		col := b.NewArray()
		defer col.Release()
		return array.NewRecord(schema, []arrow.Array{col}, int64(len(vals)))
	}
	path := filepath.Join(t.TempDir(), "s.arrow")
	err := WriteIPCFile(path, schema, mem, func(emit func(arrow.Record) error) error {
		for i := int64(0); i < 3; i++ {
			if err := emit(rec(i, i+10)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f, ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.NumRecords() != 3 {
		t.Fatalf("%d records, want 3", r.NumRecords())
	}
	for i := 0; i < 3; i++ {
		got, err := r.Record(i)
		if err != nil {
			t.Fatal(err)
		}
		if v := got.Column(0).(*array.Int64).Int64Values(); v[0] != int64(i) || v[1] != int64(i)+10 {
			t.Fatalf("record %d: %v", i, v)
		}
	}
	boom := errors.New("boom")
	if err := WriteIPCFile(path, schema, mem, func(emit func(arrow.Record) error) error { _ = emit(rec(1)); return boom }); !errors.Is(err, boom) {
		t.Fatalf("producer error: %v", err)
	}
}
