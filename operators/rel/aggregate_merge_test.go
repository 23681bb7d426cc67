package rel

import (
	"math/rand"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// A windowed aggregation in two phases (partial aggregations each fed whole
// batches in turn, then MergeAggregate) answers the one-phase aggregation's
// rows, and sends each window's rows at the epoch the one-phase sends
// them: downstream judges lateness by those epochs.
func TestMergeAggregateAnswersAsOnePhaseAtItsEpochs(t *testing.T) {
	r := expr.Builtins()
	agg := func(name string, args ...expr.Expr) *expr.Aggregate {
		a, err := r.NewAggregate(name, false, args...)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	col := func(i int, name string, dt *expr.Column) *expr.Column {
		return &expr.Column{Index: i, Name: name, DataType: dt.DataType}
	}
	tsCol := &expr.Column{DataType: expr.Timestamp}
	for _, w := range []*WindowSpec{
		{Type: expr.Tumble, Time: colTS, Size: 700 * time.Millisecond},
		{Type: expr.Hop, Time: colTS, Size: 1500 * time.Millisecond, Slide: 400 * time.Millisecond},
	} {
		one := AggregateSpec{Group: []expr.Expr{colK}, GroupNames: []string{"k"}, Window: w,
			Aggs:     []*expr.Aggregate{agg("count"), agg("sum", colV), agg("min", colV), agg("max", colV)},
			AggNames: []string{"n", "sv", "lo", "hi"}}
		partial := one
		mid := partial.OutputSchema()
		n := &expr.Column{Index: 3, DataType: expr.Int64}
		final := AggregateSpec{
			Group:      []expr.Expr{col(0, "k", colK), col(1, "window_start", tsCol), col(2, "window_end", tsCol)},
			GroupNames: []string{"k", "window_start", "window_end"},
			Aggs:       []*expr.Aggregate{agg("sum", n), agg("sum", col(4, "sv", colV)), agg("min", col(5, "lo", colV)), agg("max", col(6, "hi", colV))},
			AggNames:   []string{"n", "sv", "lo", "hi"}}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		rng := rand.New(rand.NewSource(5))
		_, batches, epochs := streamRows(rng, 3000, 61, 80_000)
		in := func() []dataflow.Batch {
			var out []dataflow.Batch
			for i, b := range batches {
				out = append(out, dataflow.Batch{Epoch: EpochOf(epochs[i]), Record: makeRecord(t, mem, streamSchema, b)})
			}
			return out
		}
		fns := functions.Builtins()
		want, err := runGraph(t, mem, in(), false, func(dataflow.Instance) (dataflow.Operator, error) {
			return NewAggregate(one, streamSchema, fns, nil), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// Three partial instances, each taking whole batches in turn.
		g := &dataflow.Graph{Query: "t"}
		src := g.AddOperator(dataflow.OperatorSpec{Name: "src", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
			return builtin.NewSliceSource(in()), nil
		}})
		pop := g.AddOperator(dataflow.OperatorSpec{Name: "partial", Inputs: 1, Outputs: 1, Workers: make([]int, 3), New: func(dataflow.Instance) (dataflow.Operator, error) {
			return NewAggregate(partial, streamSchema, fns, nil), nil
		}})
		mop := g.AddOperator(dataflow.OperatorSpec{Name: "merge", Inputs: 1, Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
			return NewMergeAggregate(final, mid, fns, nil), nil
		}})
		got := &builtin.Captured{}
		sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, New: func(i dataflow.Instance) (dataflow.Operator, error) {
			return builtin.NewCapture(got, i.Index), nil
		}})
		g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: src}, To: dataflow.Port{Op: pop}, Kind: dataflow.Balance})
		g.Connect(pop, 0, mop, 0)
		g.Connect(mop, 0, sink, 0)
		ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem})
		if err == nil {
			err = dataflow.StepUntilDone(ws, 1_000_000)
		}
		if err != nil {
			t.Fatal(err)
		}
		wantRows, gotRows := recordRows(capturedRecords(want)), recordRows(capturedRecords(got))
		if len(wantRows) < 50 {
			t.Fatalf("%d rows: the data does not exercise windows", len(wantRows))
		}
		sameRows(t, "two phases", gotRows, wantRows)
		epochOf := func(c *builtin.Captured) map[string]dataflow.Epoch {
			at := map[string]dataflow.Epoch{}
			for _, b := range c.Batches() {
				for _, row := range recordRows([]arrow.Record{b.Record}) {
					at[rowKey(row)] = b.Epoch
				}
			}
			return at
		}
		wantAt, gotAt := epochOf(want), epochOf(got)
		for k, e := range wantAt {
			if gotAt[k] != e {
				t.Fatalf("row %s at epoch %d, the one phase sends it at %d", k, gotAt[k], e)
			}
		}
		want.Release()
		got.Release()
		mem.AssertSize(t, 0)
	}
}
