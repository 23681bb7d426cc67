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

// rowEpochs runs the operator mk makes over inputs (a source each, a
// SliceSource, or a burstSource when burst) and returns the epochs each
// output row went out at, by row.
func rowEpochs(t *testing.T, mem memory.Allocator, inputs [][]dataflow.Batch, burst bool, mk func() (dataflow.Operator, error)) map[string][]dataflow.Epoch {
	t.Helper()
	return chainEpochs(t, mem, inputs, burst, mk)
}

// chainEpochs is rowEpochs over a chain of operators: the first takes the
// inputs, each next one the output of the one before (a two-phase
// aggregation's partial and final phases).
func chainEpochs(t *testing.T, mem memory.Allocator, inputs [][]dataflow.Batch, burst bool, mks ...func() (dataflow.Operator, error)) map[string][]dataflow.Epoch {
	t.Helper()
	g := &dataflow.Graph{Query: "t"}
	op := g.AddOperator(dataflow.OperatorSpec{Name: "op", Inputs: len(inputs), Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return mks[0]() }})
	first := op
	for i, mk := range mks[1:] {
		next := g.AddOperator(dataflow.OperatorSpec{Name: fmt.Sprintf("op%d", i+1), Inputs: 1, Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return mk() }})
		g.Connect(op, 0, next, 0)
		op = next
	}
	for i, in := range inputs {
		src := g.AddOperator(dataflow.OperatorSpec{Name: fmt.Sprintf("src%d", i), Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
			if burst {
				return &burstSource{batches: in}, nil
			}
			return builtin.NewSliceSource(in), nil
		}})
		g.Connect(src, 0, first, i)
	}
	capt := &builtin.Captured{}
	defer capt.Release()
	sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, New: func(in dataflow.Instance) (dataflow.Operator, error) {
		return builtin.NewCapture(capt, in.Index), nil
	}})
	g.Connect(op, 0, sink, 0)
	ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := dataflow.StepUntilDone(ws, 1_000_000); err != nil {
		t.Fatal(err)
	}
	at := map[string][]dataflow.Epoch{}
	for _, b := range capt.Batches() {
		for _, r := range recordRows([]arrow.Record{b.Record}) {
			at[rowKey(r)] = append(at[rowKey(r)], b.Epoch)
		}
	}
	for _, es := range at {
		slices.Sort(es)
	}
	return at
}

// sameCommits checks the client's view of a kill after each epoch the
// first run sent rows at: the first run's rows below that epoch were
// written, the replay's rows from it on are: each row once, none lost.
func sameCommits(t *testing.T, first, replay map[string][]dataflow.Epoch) {
	t.Helper()
	rows := 0
	var cuts []dataflow.Epoch
	for _, es := range first {
		rows += len(es)
		cuts = append(cuts, es...)
	}
	if rows < 100 {
		t.Fatalf("%d rows: too few to tell", rows)
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	for _, cut := range cuts {
		var lost, twice []string
		for k, es := range first {
			written := 0
			for _, e := range es {
				if e < cut {
					written++
				}
			}
			for _, e := range replay[k] {
				if e >= cut {
					written++
				}
			}
			switch {
			case written < len(es):
				lost = append(lost, fmt.Sprintf("%s (epochs %v, replayed at %v)", k, es, replay[k]))
			case written > len(es):
				twice = append(twice, fmt.Sprintf("%s (epochs %v, replayed at %v)", k, es, replay[k]))
			}
		}
		if len(lost)+len(twice) > 0 {
			slices.Sort(lost)
			slices.Sort(twice)
			t.Fatalf("committed below epoch %d: %d rows lost, %d written twice, of %d; lost %q, twice %q",
				cut, len(lost), len(twice), rows, lost[:min(3, len(lost))], twice[:min(3, len(twice))])
		}
	}
}

// streamBatches is n rows of streamRows (seed) in batches of batch rows,
// each at its epoch plus lag.
func streamBatches(t *testing.T, mem memory.Allocator, seed int64, n, batch int, lag time.Duration) []dataflow.Batch {
	_, rows, epochs := streamRows(rand.New(rand.NewSource(seed)), n, batch, 30_000)
	var in []dataflow.Batch
	for i, b := range rows {
		in = append(in, dataflow.Batch{Epoch: EpochOf(epochs[i] + lag.Microseconds()), Record: makeRecord(t, mem, streamSchema, b)})
	}
	return in
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
	for _, grain := range []time.Duration{0, 50 * time.Millisecond} {
		mk := func() (dataflow.Operator, error) {
			o, err := NewStreamOver(funcs, []string{"avg10"}, streamSchema, functions.Builtins(), nil)
			if err == nil {
				o.SetLag(lag)
				o.SetGrain(grain)
			}
			return o, err
		}
		var runs [2]map[string][]dataflow.Epoch
		for i, burst := range []bool{false, true} {
			runs[i] = rowEpochs(t, mem, [][]dataflow.Batch{streamBatches(t, mem, 5, 600, 20, lag)}, burst, mk)
		}
		sameCommits(t, runs[0], runs[1])
	}
}

// TestStreamOverGrainSharesEpochs: with a grain, the rows whose times fall
// in one grain go out at one epoch, its start plus the lag, with the same
// values as one epoch a time gives, and no more epochs than grains.
func TestStreamOverGrainSharesEpochs(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const lag, grain = 5 * time.Millisecond, 200 * time.Millisecond
	funcs := []*logical.WindowFunc{
		{Func: "sum", Args: []expr.Expr{colV}, Partition: []expr.Expr{colK}, Order: []logical.WindowKey{{Expr: colTS}}, DataType: expr.Int64,
			Frame: logical.Frame{Unit: logical.FrameRange, Start: logical.FrameBound{Kind: logical.UnboundedPreceding}, End: logical.FrameBound{Kind: logical.CurrentRow}}},
	}
	run := func(g time.Duration) map[string][]dataflow.Epoch {
		return rowEpochs(t, mem, [][]dataflow.Batch{streamBatches(t, mem, 6, 800, 20, lag)}, false, func() (dataflow.Operator, error) {
			o, err := NewStreamOver(funcs, []string{"s"}, streamSchema, functions.Builtins(), nil)
			if err == nil {
				o.SetLag(lag)
				o.SetGrain(g)
			}
			return o, err
		})
	}
	fine, coarse := run(0), run(grain)
	if len(fine) != len(coarse) || len(fine) < 100 {
		t.Fatalf("%d rows with a grain, %d without", len(coarse), len(fine))
	}
	epochs := map[dataflow.Epoch]bool{}
	for k, es := range coarse {
		if len(fine[k]) != len(es) {
			t.Fatalf("row %s: %d times with a grain, %d without", k, len(es), len(fine[k]))
		}
		for i, e := range es {
			// Without a grain a row goes out at its time plus the lag.
			ts := int64(fine[k][i]) - lag.Microseconds()
			g := grain.Microseconds()
			if want := dataflow.Epoch(ts/g*g + lag.Microseconds()); e != want {
				t.Fatalf("row %s at epoch %d, want its grain's %d", k, e, want)
			}
			epochs[e] = true
		}
	}
	if span := 800 * 10 * time.Millisecond; len(epochs) > int(span/grain)+2 {
		t.Fatalf("%d epochs over %v of time in grains of %v", len(epochs), span, grain)
	}
}

// TestWindowJoinRowsGoOutAtTheirWindowsEnd: as the OVER's rows (above), a
// window join's pairs go out at the epoch of their window's end, the same
// in a replay whose frontier skips as in the first run.
func TestWindowJoinRowsGoOutAtTheirWindowsEnd(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rk := &expr.Column{Index: 5, Name: "k2", DataType: expr.Int64}
	spec := WindowJoinSpec{Join: joinOn(t, 5, colK, rk), LeftTime: colTS, RightTime: colTS, Size: 500 * time.Millisecond}
	mk := func() (dataflow.Operator, error) {
		return NewWindowJoin(spec, streamSchema, streamSchema, functions.Builtins(), nil)
	}
	var runs [2]map[string][]dataflow.Epoch
	for i, burst := range []bool{false, true} {
		in := [][]dataflow.Batch{streamBatches(t, mem, 7, 400, 25, 0), streamBatches(t, mem, 8, 300, 20, 0)}
		runs[i] = rowEpochs(t, mem, in, burst, mk)
	}
	sameCommits(t, runs[0], runs[1])
}
