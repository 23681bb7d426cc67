package ml

import (
	"errors"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// collect reads n results or fails after a deadline (the loop runs on a real clock).
func collect(t *testing.T, r *Runner, n int) []Result {
	t.Helper()
	var out []Result
	deadline := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case res, ok := <-r.Results():
			if !ok {
				t.Fatalf("results closed after %d of %d", len(out), n)
			}
			out = append(out, res)
		case <-deadline:
			t.Fatalf("only %d of %d results before the deadline", len(out), n)
		}
	}
	return out
}

func TestRunnerBatchesAcrossRecordsInOrder(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	f := &fakeSession{}
	m := bindFake(t, f, testHeads, 8)
	r, err := NewRunner(m, mem, BatchConfig{MaxBatch: 8, MaxDelay: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{3, 1, 5, 7, 2, 4, 6, 1, 3, 2}
	nan := map[int]bool{9: true}
	first := 0
	for i, n := range sizes {
		rec := inputRecord(t, mem, first, n, nan, nil)
		if err := r.Submit(rec, i); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		first += n
	}
	r.Close()
	res := collect(t, r, len(sizes))
	if _, ok := <-r.Results(); ok {
		t.Error("results not closed after the last record")
	}
	id := 0
	for i, x := range res {
		if x.Err != nil || x.Tag != i {
			t.Fatalf("result %d: tag %v err %v", i, x.Tag, x.Err)
		}
		rec := x.Record
		if int(rec.NumRows()) != sizes[i] {
			t.Fatalf("record %d has %d rows, want %d", i, rec.NumRows(), sizes[i])
		}
		ids := rec.Column(0).(*array.Int64)
		labels := rec.Column(2).(*array.String)
		errs := rec.Column(5).(*array.String)
		for row := 0; row < sizes[i]; row++ {
			if ids.Value(row) != int64(id) {
				t.Fatalf("row order: got id %d, want %d", ids.Value(row), id)
			}
			if nan[id] != errs.IsValid(row) {
				t.Errorf("row %d: error %q", id, errs.Value(row))
			}
			if !nan[id] && labels.Value(row) != []string{"a", "b", "c"}[id%3] {
				t.Errorf("row %d: label %q", id, labels.Value(row))
			}
			id++
		}
		rec.Release()
	}
	st := r.Stats()
	if st.Rows < 34 || st.MaxBatch > 8 {
		t.Errorf("stats %+v", st)
	}
	spans := false
	for _, n := range f.calls {
		if n > 7 { // no record has more than 7 rows
			spans = true
		}
	}
	if !spans {
		t.Errorf("no batch spanned records: %v", f.calls)
	}
	if err := r.Submit(nil, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("submit after close: %v", err)
	}
}

func TestRunnerCutsOnDelay(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	f := &fakeSession{}
	m := bindFake(t, f, testHeads, 64)
	r, err := NewRunner(m, mem, BatchConfig{MaxBatch: 64, MaxDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec := inputRecord(t, mem, 0, 3, nil, nil)
	if err := r.Submit(rec, "a"); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	// The batch is far from full and the input stays open: only the delay cuts it.
	res := collect(t, r, 1)
	defer res[0].Record.Release()
	if res[0].Record.NumRows() != 3 || r.Stats().MaxQueueDelay < time.Millisecond {
		t.Errorf("rows %d, stats %+v", res[0].Record.NumRows(), r.Stats())
	}
}

func TestRunnerWrongSchemaIsAResult(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	m := bindFake(t, &fakeSession{}, testHeads, 4)
	r, err := NewRunner(m, mem, BatchConfig{})
	if err != nil {
		t.Fatal(err)
	}
	other := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(mem, other)
	b.Field(0).(*array.Int64Builder).Append(1)
	rec := b.NewRecord()
	b.Release()
	if err := r.Submit(rec, 1); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	r.Close()
	res := collect(t, r, 1)
	if !errors.Is(res[0].Err, ErrSchema) || res[0].Record != nil {
		t.Errorf("want ErrSchema result, got %+v", res[0])
	}
}
