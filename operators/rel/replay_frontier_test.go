package rel

import (
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// Every operator that sends rows when the frontier moves, run as
// TestStreamOverRowsGoOutAtTheirOwnEpochs runs the OVER: once with the
// frontier stepping per batch, once skipping from the first batch to the
// end (a recovered query's replay), and a commit at every epoch of the
// first run must leave each row written once. A row that goes out at the
// epoch the operator held when the frontier passed is lost or written
// twice at some cut; a row that goes out at an epoch its own time (or its
// batch's epoch) decides is not.

// replaySame runs mks over fresh inputs twice, stepping and skipping, and
// checks every cut.
func replaySame(t *testing.T, inputs func(memory.Allocator) [][]dataflow.Batch, mks ...func() (dataflow.Operator, error)) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var runs [2]map[string][]dataflow.Epoch
	for i, burst := range []bool{false, true} {
		runs[i] = chainEpochs(t, mem, inputs(mem), burst, mks...)
	}
	sameCommits(t, runs[0], runs[1])
}

// oneStream is n rows of streamRows (seed) in batches of batch rows.
func oneStream(t *testing.T, seed int64, n, batch int) func(memory.Allocator) [][]dataflow.Batch {
	return func(mem memory.Allocator) [][]dataflow.Batch {
		return [][]dataflow.Batch{streamBatches(t, mem, seed, n, batch, 0)}
	}
}

func aggregateOp(spec AggregateSpec) func() (dataflow.Operator, error) {
	return func() (dataflow.Operator, error) {
		return NewAggregate(spec, streamSchema, functions.Builtins(), nil), nil
	}
}

// TestWindowedAggregateRowsGoOutAtTheirWindowsEnd: TUMBLE and HOP windows
// (the slabs) go out at their end, whatever the frontier's steps.
func TestWindowedAggregateRowsGoOutAtTheirWindowsEnd(t *testing.T) {
	for _, w := range []*WindowSpec{
		{Type: expr.Tumble, Time: colTS, Size: 200 * time.Millisecond},
		{Type: expr.Hop, Time: colTS, Size: 600 * time.Millisecond, Slide: 200 * time.Millisecond},
		{Type: expr.Tumble, Time: colTS, Size: 200 * time.Millisecond, Lag: 50 * time.Millisecond},
	} {
		t.Run(w.Type.String(), func(t *testing.T) {
			replaySame(t, oneStream(t, 11, 1500, 20), aggregateOp(aggSpec(t, w)))
		})
	}
}

// TestSessionRowsGoOutAtTheirSessionsEnd: the sessions a frontier step
// closes together went out as one record at the latest end among them;
// a replay closing more of them at once sent the earlier sessions at a
// later epoch, written twice at a cut between the two.
func TestSessionRowsGoOutAtTheirSessionsEnd(t *testing.T) {
	spec := aggSpec(t, &WindowSpec{Type: expr.Session, Time: colTS, Gap: 40 * time.Millisecond})
	spec.Group = []expr.Expr{colK, colS}
	spec.GroupNames = []string{"k", "s"}
	replaySame(t, oneStream(t, 12, 1500, 20), aggregateOp(spec))
}

// closingSpec is a closing GROUP BY k, ts (a key a time attribute: its
// second closes when the watermark passes it).
func closingSpec(t *testing.T) AggregateSpec {
	count, err := expr.Builtins().NewAggregate("count", false)
	if err != nil {
		t.Fatal(err)
	}
	return AggregateSpec{Group: []expr.Expr{colK, colTS}, GroupNames: []string{"k", "ts"},
		Window: &WindowSpec{Type: expr.Tumble, Time: colTS, Size: 100 * time.Millisecond, ByKey: true, Key: 1},
		Aggs:   []*expr.Aggregate{count}, AggNames: []string{"n"}}
}

// TestClosingGroupByRowsGoOutAtTheirKeysGrain: a closing GROUP BY's groups
// go out at the end of their key's grain.
func TestClosingGroupByRowsGoOutAtTheirKeysGrain(t *testing.T) {
	replaySame(t, oneStream(t, 13, 1500, 20), aggregateOp(closingSpec(t)))
}

// TestMergedClosingGroupByRowsGoOutAtTheirEpochs: two-phase aggregation's
// final phase (MergeAggregate) sends each epoch's combined rows at that
// epoch, after a partial phase that sends its groups at their grain's end.
func TestMergedClosingGroupByRowsGoOutAtTheirEpochs(t *testing.T) {
	r := expr.Builtins()
	one := closingSpec(t)
	partial := one
	mid := partial.OutputSchema()
	sum, err := r.NewAggregate("sum", false, &expr.Column{Index: 2, Name: "n", DataType: expr.Int64})
	if err != nil {
		t.Fatal(err)
	}
	final := AggregateSpec{
		Group:      []expr.Expr{&expr.Column{Index: 0, Name: "k", DataType: expr.Int64}, &expr.Column{Index: 1, Name: "ts", DataType: expr.Timestamp}},
		GroupNames: []string{"k", "ts"},
		Aggs:       []*expr.Aggregate{sum}, AggNames: []string{"n"}}
	replaySame(t, oneStream(t, 14, 1500, 20), aggregateOp(partial), func() (dataflow.Operator, error) {
		return NewMergeAggregate(final, mid, functions.Builtins(), nil), nil
	})
}

// groupByKV is a GROUP BY k, v without a window: its rows go out when the
// input ends.
func groupByKV(t *testing.T) AggregateSpec {
	spec := aggSpec(t, nil)
	spec.Group = []expr.Expr{colK, colV}
	spec.GroupNames = []string{"k", "v"}
	return spec
}

// TestGroupByAtTheEndGoesOutAtTheLastEpoch: a GROUP BY without a window
// over a stream that ends answers at the end, at the epoch of the last
// rows it took, not at the frontier's last step before the end (where a
// replay skipping to the end left it earlier: every row lost at a cut
// after it).
func TestGroupByAtTheEndGoesOutAtTheLastEpoch(t *testing.T) {
	replaySame(t, oneStream(t, 15, 1500, 20), aggregateOp(groupByKV(t)))
}

// countThenSum is a GROUP BY k, v's count(*) in two phases: the partial
// counts, and the final phase summing them.
func countThenSum(t *testing.T) (partial, final AggregateSpec) {
	partial = groupByKV(t)
	partial.Aggs, partial.AggNames = partial.Aggs[:1], partial.AggNames[:1] // count(*)
	sum, err := expr.Builtins().NewAggregate("sum", false, &expr.Column{Index: 2, Name: "n", DataType: expr.Int64})
	if err != nil {
		t.Fatal(err)
	}
	final = AggregateSpec{
		Group:      []expr.Expr{&expr.Column{Index: 0, Name: "k", DataType: expr.Int64}, &expr.Column{Index: 1, Name: "v", DataType: expr.Int64}},
		GroupNames: []string{"k", "v"},
		Aggs:       []*expr.Aggregate{sum}, AggNames: []string{"n"}}
	return partial, final
}

// TestTwoPhaseGroupByAtTheEndGoesOutAtTheLastEpoch: the final phase takes
// the partial rows only at the end, at the partial phase's last epoch,
// and answers there.
func TestTwoPhaseGroupByAtTheEndGoesOutAtTheLastEpoch(t *testing.T) {
	partial, final := countThenSum(t)
	replaySame(t, oneStream(t, 23, 1500, 20), aggregateOp(partial), func() (dataflow.Operator, error) {
		return NewAggregate(final, partial.OutputSchema(), functions.Builtins(), nil), nil
	})
}

// TestSpillingGroupByGoesOutAtTheLastEpoch: as above, for the aggregation
// that spills past the memory limit, in memory and spilled.
func TestSpillingGroupByGoesOutAtTheLastEpoch(t *testing.T) {
	partial, final := countThenSum(t)
	for _, limit := range []int64{1 << 30, 1 << 10} {
		replaySame(t, oneStream(t, 16, 1500, 20), func() (dataflow.Operator, error) {
			return NewSpillAggregate(partial, final, streamSchema, functions.Builtins(), limit, nil), nil
		})
	}
}

// TestStreamRankRowsGoOutAtTheirBatchesEpoch: top-N and dedup per key on a
// stream send their changes at the epoch of the rows that made them.
func TestStreamRankRowsGoOutAtTheirBatchesEpoch(t *testing.T) {
	for _, n := range []int64{1, 3} {
		f := &logical.WindowFunc{Func: "row_number", Partition: []expr.Expr{colK, colS}, Order: []logical.WindowKey{{Expr: colF, Desc: true}}, DataType: expr.Int64}
		replaySame(t, oneStream(t, 17, 1500, 20), func() (dataflow.Operator, error) {
			return NewStreamRank(f, "rn", n, 0, streamSchema, functions.Builtins(), nil)
		})
	}
}

// TestStreamJoinRowsGoOutAtTheirBatchesEpoch: a regular join of two
// streams sends each pair at the epoch of the batch that made it.
func TestStreamJoinRowsGoOutAtTheirBatchesEpoch(t *testing.T) {
	rk := &expr.Column{Index: 5, Name: "k2", DataType: expr.Int64}
	spec := StreamJoinSpec{Join: joinOn(t, 5, colK, rk)}
	replaySame(t, func(mem memory.Allocator) [][]dataflow.Batch {
		return [][]dataflow.Batch{streamBatches(t, mem, 18, 150, 10, 0), streamBatches(t, mem, 19, 120, 10, 0)}
	}, func() (dataflow.Operator, error) {
		return NewStreamJoin(spec, streamSchema, streamSchema, functions.Builtins(), nil)
	})
}

// TestSpillJoinRowsGoOutAtTheirBatchesEpoch: the join that spills past the
// memory limit (both sides end) sent its pairs at the epoch it held when
// the probe row came or the table was built, the frontier's last step.
func TestSpillJoinRowsGoOutAtTheirBatchesEpoch(t *testing.T) {
	rk := &expr.Column{Index: 5, Name: "k2", DataType: expr.Int64}
	for _, limit := range []int64{1 << 30, 1 << 10} {
		replaySame(t, func(mem memory.Allocator) [][]dataflow.Batch {
			return [][]dataflow.Batch{streamBatches(t, mem, 20, 150, 10, 0), streamBatches(t, mem, 21, 120, 10, 0)}
		}, func() (dataflow.Operator, error) {
			return NewSpillJoin(joinOn(t, 5, colK, rk), streamSchema, streamSchema, functions.Builtins(), limit, nil), nil
		})
	}
}

// TestAtTheEndOperatorsHoldTheirFirstEpoch: ORDER BY, LIMIT with ORDER BY
// and window functions over a stream that ends send everything at the
// epoch they start at, which no frontier moves.
func TestAtTheEndOperatorsHoldTheirFirstEpoch(t *testing.T) {
	keys := []SortKey{{Expr: colTS}, {Expr: colK}}
	fn := &logical.WindowFunc{Func: "row_number", Partition: []expr.Expr{colK}, Order: []logical.WindowKey{{Expr: colTS}}, DataType: expr.Int64}
	for name, mk := range map[string]func() (dataflow.Operator, error){
		"sort":  func() (dataflow.Operator, error) { return NewSortAtEnd(keys, streamSchema, functions.Builtins()) },
		"top-n": func() (dataflow.Operator, error) { return NewTopNAtEnd(300, keys, streamSchema, functions.Builtins()) },
		"window": func() (dataflow.Operator, error) {
			return NewWindowFuncsAtEnd([]*logical.WindowFunc{fn}, []string{"rn"}, streamSchema, functions.Builtins())
		},
	} {
		t.Run(name, func(t *testing.T) { replaySame(t, oneStream(t, 22, 600, 20), mk) })
	}
}
