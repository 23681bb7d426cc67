package rel

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// closeWindowsThroughOperator runs rows a millisecond apart (a window per
// millisecond) through an Aggregate as one batch at epoch 0 and returns the
// batches it sent.
func closeWindowsThroughOperator(t *testing.T, mem memory.Allocator, w *WindowSpec, n int) []dataflow.Batch {
	t.Helper()
	in := []dataflow.Batch{{Epoch: 0, Record: makeRecord(t, mem, streamSchema, rowsMsApart(n))}}
	spec := aggSpec(t, w)
	capt, err := runGraph(t, mem, in, false, func(dataflow.Instance) (dataflow.Operator, error) {
		return NewAggregate(spec, streamSchema, functions.Builtins(), nil), nil
	})
	if err != nil {
		capt.Release()
		t.Fatal(err)
	}
	t.Cleanup(capt.Release)
	var out []dataflow.Batch
	for _, b := range capt.Batches() {
		out = append(out, b.Batch)
	}
	return out
}

// Processing-time windows all go out at the epoch the operator holds, so
// those a time closes together leave in records of up to closedBatchRows
// rows, not a record each (#25): 20,000 windows closed by two advances
// (the batch's latest time, then the input's end) are 6 records, where a
// record per window was 20,000. Their rows and order are the event-time
// windows', which keep a record per window, each at the epoch of its end
// (LIMIT and ORDER BY per window, the ordered sink and the two-phase
// merge read an epoch as a window).
func TestWindowsClosedTogetherShareRecords(t *testing.T) {
	const windows = 20000
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) }) // after the captured records' Cleanup
	tumble := WindowSpec{Type: expr.Tumble, Time: colTS, Size: time.Millisecond}
	proc := tumble
	proc.ProcTime = true
	byProc := closeWindowsThroughOperator(t, mem, &proc, windows)
	byEvent := closeWindowsThroughOperator(t, mem, &tumble, windows)

	if len(byEvent) != windows {
		t.Fatalf("event time: %d records for %d windows, want one a window", len(byEvent), windows)
	}
	for i, b := range byEvent {
		if b.Record.NumRows() != 1 {
			t.Fatalf("event time: record %d has %d rows, want one window's", i, b.Record.NumRows())
		}
		end := functions.Int64Values(b.Record.Column(2))[0]
		if b.Epoch != EpochOf(end) {
			t.Fatalf("event time: window ending %d went out at epoch %d", end, b.Epoch)
		}
	}
	// Two advances: at most one record more each than the rows need.
	most := (windows+closedBatchRows-1)/closedBatchRows + 2
	if len(byProc) > most {
		t.Fatalf("processing time: %d records for %d windows closed by two advances, want at most %d (%d rows a record)", len(byProc), windows, most, closedBatchRows)
	}
	for i, b := range byProc {
		if b.Record.NumRows() > closedBatchRows {
			t.Fatalf("processing time: record %d has %d rows, more than %d", i, b.Record.NumRows(), closedBatchRows)
		}
	}
	var procRecs, eventRecs = recordsOf(byProc), recordsOf(byEvent)
	got, want := recordRows(procRecs), recordRows(eventRecs)
	if len(got) != windows || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("processing time: %d rows, not the event-time windows' %d rows in their order", len(got), len(want))
	}
}

// The merge of a two-phase aggregation closes every pending epoch at the
// input's end: each epoch's rows still leave at their epoch, a record each,
// cut from one record built for all of them.
func TestMergeClosesEpochsARecordEach(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	h, err := newEpochAggregate(mem, aggSpec(t, nil), streamSchema, functions.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	rows := rowsMsApart(3000)
	for i := range 1000 {
		rec := makeRecord(t, mem, streamSchema, rows[3*i:3*i+3])
		if err := h.addEpoch(rec, int64(10*i)); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	recs, epochs := h.closeEpochs(math.MaxInt64)
	defer releaseRecords(recs)
	if len(recs) != 1000 {
		t.Fatalf("%d records for 1000 epochs", len(recs))
	}
	for i, r := range recs {
		if epochs[i] != int64(10*i) || r.NumRows() != 3 {
			t.Fatalf("record %d: epoch %d, %d rows; want epoch %d, 3 rows", i, epochs[i], r.NumRows(), 10*i)
		}
		if k := functions.Int64Values(r.Column(0)); k[0] != int64(3*i) || k[2] != int64(3*i+2) {
			t.Fatalf("record %d: keys %v, want %d..%d", i, k, 3*i, 3*i+2)
		}
	}
}

func recordsOf(bs []dataflow.Batch) []arrow.Record {
	out := make([]arrow.Record, len(bs))
	for i, b := range bs {
		out[i] = b.Record
	}
	return out
}
