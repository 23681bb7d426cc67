package rel

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// burstSource sends every batch at its own epoch but holds its capability
// at the first batch's until all are sent: the frontier downstream then
// skips from there to the end, as it skips over many source batches when a
// recovered query replays its streams as fast as it reads them and their
// progress comes coalesced.
type burstSource struct {
	dataflow.Base
	batches []dataflow.Batch
	cap     *dataflow.Capability
}

func (s *burstSource) Open(_ *dataflow.Context, cap *dataflow.Capability) error {
	var err error
	s.cap, err = cap.Retain()
	return err
}

func (s *burstSource) Produce(ctx *dataflow.Context) (bool, error) {
	defer s.cap.Drop()
	for i, b := range s.batches {
		s.batches[i].Record = nil
		c, err := s.cap.Delayed(b.Epoch)
		if err != nil {
			b.Record.Release()
			return true, err
		}
		err = ctx.Emit(0, c, b.Record)
		c.Drop()
		if err != nil {
			return true, err
		}
	}
	return true, nil
}

func (s *burstSource) Close(*dataflow.Context) error {
	for _, b := range s.batches {
		if b.Record != nil {
			b.Record.Release()
		}
	}
	return nil
}

// TestStreamOverRowsGoOutAtTheirOwnEpochs: a recovery replays a query's
// streams from the start, and the client keeps, of the replay, only the
// rows at epochs its sinks had not committed before the kill (those below
// were written then). So every row must go out at the same epoch in the
// replay as in the first run, however differently the frontier stepped
// there. An OVER row goes out at the epoch its own time makes it due (its
// time plus the lag), not at whatever epoch the operator held when the
// frontier passed it: holding the frontier's last step, a replay whose
// frontier skipped many batches sent rows at an earlier epoch than the
// first run had, the client took them for rows already written, and they
// were lost (Nexmark's q6 after a kill on two workers: 1,182 rows of 1,200).
func TestStreamOverRowsGoOutAtTheirOwnEpochs(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const lag = 5 * time.Millisecond
	funcs := []*logical.WindowFunc{
		{Func: "avg", Args: []expr.Expr{colV}, Partition: []expr.Expr{colK}, Order: []logical.WindowKey{{Expr: colTS}}, DataType: expr.Float64,
			Frame: logical.Frame{Unit: logical.FrameRows, Start: logical.FrameBound{Kind: logical.OffsetPreceding, Offset: 10}, End: logical.FrameBound{Kind: logical.CurrentRow}}},
	}
	batches := func() []dataflow.Batch {
		// The same rows and batch epochs for both runs.
		_, rows, epochs := streamRows(rand.New(rand.NewSource(5)), 600, 20, 30_000)
		var in []dataflow.Batch
		for i, b := range rows {
			in = append(in, dataflow.Batch{Epoch: dataflow.Epoch(epochs[i] + lag.Microseconds()), Record: makeRecord(t, mem, streamSchema, b)})
		}
		return in
	}
	run := func(src func([]dataflow.Batch) dataflow.Operator) map[string]dataflow.Epoch {
		g := &dataflow.Graph{Query: "t"}
		in := batches()
		s := g.AddOperator(dataflow.OperatorSpec{Name: "src", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return src(in), nil }})
		op := g.AddOperator(dataflow.OperatorSpec{Name: "over", Inputs: 1, Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
			o, err := NewStreamOver(funcs, []string{"avg10"}, streamSchema, functions.Builtins(), nil)
			if err == nil {
				o.SetLag(lag)
			}
			return o, err
		}})
		capt := &builtin.Captured{}
		defer capt.Release()
		sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, New: func(in dataflow.Instance) (dataflow.Operator, error) {
			return builtin.NewCapture(capt, in.Index), nil
		}})
		g.Connect(s, 0, op, 0)
		g.Connect(op, 0, sink, 0)
		ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem})
		if err != nil {
			t.Fatal(err)
		}
		if err := dataflow.StepUntilDone(ws, 1_000_000); err != nil {
			t.Fatal(err)
		}
		at := map[string]dataflow.Epoch{}
		for _, b := range capt.Batches() {
			for _, r := range recordRows([]arrow.Record{b.Record}) {
				k := rowKey(r)
				if _, dup := at[k]; dup {
					t.Fatalf("row %s twice", k)
				}
				at[k] = b.Epoch
			}
		}
		return at
	}
	first := run(func(in []dataflow.Batch) dataflow.Operator { return builtin.NewSliceSource(in) })
	replay := run(func(in []dataflow.Batch) dataflow.Operator { return &burstSource{batches: in} })
	if len(first) < 500 || len(replay) != len(first) {
		t.Fatalf("%d rows in the first run, %d in the replay", len(first), len(replay))
	}
	// The client's view of a kill after each epoch the first run sent at:
	// the first run's rows below it written, the replay's from it on.
	var cuts []dataflow.Epoch
	for _, e := range first {
		cuts = append(cuts, e)
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	for _, cut := range cuts {
		var lost, twice []string
		for k, e := range first {
			r, ok := replay[k]
			switch {
			case !ok:
				lost = append(lost, k)
			case e >= cut && r < cut:
				lost = append(lost, fmt.Sprintf("%s (epoch %d, replayed at %d)", k, e, r))
			case e < cut && r >= cut:
				twice = append(twice, fmt.Sprintf("%s (epoch %d, replayed at %d)", k, e, r))
			}
		}
		if len(lost)+len(twice) > 0 {
			slices.Sort(lost)
			slices.Sort(twice)
			t.Fatalf("committed below epoch %d: %d rows lost, %d written twice, of %d; lost %q, twice %q",
				cut, len(lost), len(twice), len(first), lost[:min(3, len(lost))], twice[:min(3, len(twice))])
		}
	}
}
