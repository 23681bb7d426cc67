package frame

import (
	"bytes"
	"errors"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
)

// A record decoded in place of its message holds the message's body: a
// query's budget is charged for it while any of the record's columns lives,
// and refuses it past its limit (#25: the relay's records were counted
// nowhere).
func TestDecodeChargesTheBody(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for i := range 1000 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append("some text of a row")
	}
	rec := b.NewRecord()
	b.Release()
	defer rec.Release()
	var buf bytes.Buffer
	if _, err := NewEncoder(memory.DefaultAllocator).Encode(&buf, rec); err != nil {
		t.Fatal(err)
	}
	body := buf.Bytes()

	budget := dataflow.NewMemory("query q", 1<<20, nil)
	d := NewDecoder(budget.Allocator(memory.DefaultAllocator))
	got, err := d.Decode(body, true)
	if err != nil {
		t.Fatal(err)
	}
	if got.NumRows() != 1000 || budget.Used() < int64(1000*8) {
		t.Fatalf("decoded %d rows; the budget holds %d", got.NumRows(), budget.Used())
	}
	col := got.Column(1)
	col.Retain()
	got.Release()
	d.Close()
	if budget.Used() == 0 {
		t.Fatal("the body was uncharged while a column of it lives")
	}
	if s := col.(*array.String).Value(999); s != "some text of a row" {
		t.Fatalf("the kept column reads %q", s)
	}
	col.Release()
	if u := budget.Used(); u != 0 {
		t.Fatalf("the budget holds %d after every column was released", u)
	}

	small := dataflow.NewMemory("query q", 1024, nil)
	d2 := NewDecoder(small.Allocator(memory.DefaultAllocator))
	if _, err := d2.Decode(body, true); !errors.Is(err, dataflow.ErrMemory) {
		t.Fatalf("a body past the budget: %v, want ErrMemory", err)
	}
	if u := small.Used(); u != 0 {
		t.Fatalf("a refused body left %d charged", u)
	}
}
