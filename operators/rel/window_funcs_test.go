package rel

import (
	"errors"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

func lit(t *testing.T, v any) expr.Expr {
	t.Helper()
	l, err := expr.NewLiteral(v)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func sameKey(a, b any) bool { return a == b } // nil == nil: NULLs share a partition

// vBefore orders v ascending (desc: descending) with NULLs last.
func vBefore(q, r any, desc bool) bool {
	if q == nil {
		return false
	}
	if r == nil {
		return true
	}
	if desc {
		return q.(int64) > r.(int64)
	}
	return q.(int64) < r.(int64)
}

// TestWindowFuncsMatchBruteForce evaluates ranking, offset and frame
// functions over random rows with NULLs and ties, and checks every value
// against its definition computed row by row.
func TestWindowFuncsMatchBruteForce(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(7))
	rows, batches, _ := streamRows(rng, 700, 64, 0) // times distinct: ts orders uniquely
	var in []dataflow.Batch
	for _, b := range batches {
		in = append(in, dataflow.Batch{Record: makeRecord(t, mem, streamSchema, b)})
	}
	byK := []expr.Expr{colK}
	tsAsc := []logical.WindowKey{{Expr: colTS}}
	ms := float64(time.Millisecond / time.Microsecond)
	funcs := []*logical.WindowFunc{
		{Func: "rank", Partition: byK, Order: []logical.WindowKey{{Expr: colV}}, Frame: logical.DefaultFrame, DataType: expr.Int64},
		{Func: "dense_rank", Partition: byK, Order: []logical.WindowKey{{Expr: colV, Desc: true}}, Frame: logical.DefaultFrame, DataType: expr.Int64},
		{Func: "cume_dist", Partition: byK, Order: []logical.WindowKey{{Expr: colV}}, Frame: logical.DefaultFrame, DataType: expr.Float64},
		{Func: "sum", Args: []expr.Expr{colV}, Partition: byK, Order: tsAsc, DataType: expr.Int64,
			Frame: logical.Frame{Unit: logical.FrameRows, Start: logical.FrameBound{Kind: logical.OffsetPreceding, Offset: 3}, End: logical.FrameBound{Kind: logical.CurrentRow}}},
		{Func: "max", Args: []expr.Expr{colF}, Partition: byK, Order: tsAsc, DataType: expr.Float64,
			Frame: logical.Frame{Unit: logical.FrameRange, Start: logical.FrameBound{Kind: logical.OffsetPreceding, Offset: 50 * ms, Time: true}, End: logical.FrameBound{Kind: logical.OffsetFollowing, Offset: 20 * ms, Time: true}}},
		{Func: "lag", Args: []expr.Expr{colV, lit(t, int64(2)), lit(t, int64(-1))}, Partition: byK, Order: tsAsc, Frame: logical.DefaultFrame, DataType: expr.Int64},
		{Func: "count", Partition: byK, Order: []logical.WindowKey{{Expr: colV}}, Frame: logical.DefaultFrame, DataType: expr.Int64},
		{Func: "avg", Args: []expr.Expr{colF}, Partition: byK, DataType: expr.Float64, Frame: logical.DefaultFrame},
		// Through an accumulator, frame by frame and growing by merges.
		{Func: "count", Distinct: true, Args: []expr.Expr{colS}, Partition: byK, Order: tsAsc, DataType: expr.Int64,
			Frame: logical.Frame{Unit: logical.FrameRows, Start: logical.FrameBound{Kind: logical.OffsetPreceding, Offset: 3}, End: logical.FrameBound{Kind: logical.CurrentRow}}},
		{Func: "count", Distinct: true, Args: []expr.Expr{colV}, Partition: byK, Order: tsAsc, DataType: expr.Int64, Frame: logical.DefaultFrame},
	}
	names := []string{"r", "dr", "cd", "s3", "mx", "lag", "cnt", "avg", "ds3", "dv"}
	capt, err := runGraph(t, mem, in, false, func(dataflow.Instance) (dataflow.Operator, error) {
		return NewWindowFuncsAtEnd(funcs, names, streamSchema, functions.Builtins())
	})
	defer capt.Release()
	if err != nil {
		t.Fatal(err)
	}
	var want [][]any
	for _, r := range rows {
		var part [][]any
		for _, q := range rows {
			if sameKey(q[0], r[0]) {
				part = append(part, q)
			}
		}
		byTS := append([][]any(nil), part...)
		sort.Slice(byTS, func(i, j int) bool { return byTS[i][4].(time.Time).Before(byTS[j][4].(time.Time)) })
		pos := 0
		for byTS[pos][4] != r[4] {
			pos++
		}
		var rank, notAfter int64 = 1, 0
		desc := map[any]bool{}
		for _, q := range part {
			if vBefore(q[1], r[1], false) {
				rank++
			}
			if !vBefore(r[1], q[1], false) {
				notAfter++
			}
			if vBefore(q[1], r[1], true) {
				desc[q[1]] = true
			}
		}
		var s3 any
		for p := max(0, pos-3); p <= pos; p++ {
			if v := byTS[p][1]; v != nil {
				if s3 == nil {
					s3 = int64(0)
				}
				s3 = s3.(int64) + v.(int64)
			}
		}
		var mx any
		lo, hi := r[4].(time.Time).Add(-50*time.Millisecond), r[4].(time.Time).Add(20*time.Millisecond)
		var fsum float64
		var fn int
		for _, q := range part {
			qt := q[4].(time.Time)
			if f := q[2]; f != nil {
				fsum += f.(float64)
				fn++
				if !qt.Before(lo) && !qt.After(hi) && (mx == nil || f.(float64) > mx.(float64)) {
					mx = f
				}
			}
		}
		var lag any = int64(-1)
		if pos >= 2 {
			lag = byTS[pos-2][1]
		}
		var avg any
		if fn > 0 {
			avg = fsum / float64(fn)
		}
		ds3, dv := map[any]bool{}, map[any]bool{}
		for p := 0; p <= pos; p++ {
			if v := byTS[p][3]; v != nil && p >= pos-3 {
				ds3[v] = true
			}
			if v := byTS[p][1]; v != nil {
				dv[v] = true
			}
		}
		want = append(want, append(append([]any(nil), r...),
			rank, int64(len(desc)+1), float64(notAfter)/float64(len(part)), s3, mx, lag, notAfter, avg, int64(len(ds3)), int64(len(dv))))
	}
	sameRows(t, "window functions", recordRows(capturedRecords(capt)), want)
}

// TestWindowFuncsPerEpoch: over a windowed aggregation's output each epoch is
// one window, and ranks restart in each.
func TestWindowFuncsPerEpoch(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ts := time.UnixMicro(t0).UTC()
	in := []dataflow.Batch{
		{Epoch: 10, Record: makeRecord(t, mem, streamSchema, [][]any{{int64(1), int64(5), nil, "a", ts}, {int64(2), int64(9), nil, "b", ts}})},
		{Epoch: 20, Record: makeRecord(t, mem, streamSchema, [][]any{{int64(1), int64(7), nil, "e", ts}})},
		{Epoch: 20, Record: makeRecord(t, mem, streamSchema, [][]any{{int64(3), int64(1), nil, "c", ts}, {int64(4), nil, nil, "d", ts}})},
	}
	funcs := []*logical.WindowFunc{
		{Func: "row_number", Order: []logical.WindowKey{{Expr: colV, Desc: true}}, Frame: logical.DefaultFrame, DataType: expr.Int64},
		{Func: "sum", Args: []expr.Expr{colV}, Frame: logical.DefaultFrame, DataType: expr.Int64},
	}
	capt, err := runGraph(t, mem, in, false, func(dataflow.Instance) (dataflow.Operator, error) {
		return NewWindowFuncs(funcs, []string{"rn", "total"}, streamSchema, functions.Builtins())
	})
	defer capt.Release()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]any{}
	for _, b := range capt.Batches() {
		for _, r := range recordRows([]arrow.Record{b.Record}) {
			got[r[3].(string)] = [2]any{r[5], r[6]}
		}
	}
	want := map[string][2]any{
		"a": {int64(2), int64(14)}, "b": {int64(1), int64(14)}, // epoch 10: 9, 5
		"e": {int64(1), int64(8)}, "c": {int64(2), int64(8)}, "d": {int64(3), int64(8)}, // epoch 20: 7, 1, NULL (last)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %v, want %v", k, got[k], w)
		}
	}
}

// TestStreamOverEmitsPerWatermarkAndDropsLateRows runs Flink's OVER
// aggregation over out-of-order rows: every row that is not late comes out
// once, after the watermark passed it, with the sum over its partition's
// rows of the last 50 ms (of the rows that came out); rows older than the
// watermark when they arrive are dropped and counted.
func TestStreamOverEmitsPerWatermarkAndDropsLateRows(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(11))
	rows, batches, epochs := streamRows(rng, 900, 30, 40_000)
	// Rows far behind the watermark: late whenever they come.
	for i := 5; i < len(batches); i += 6 {
		old := time.UnixMicro(epochs[i] - 2_000_000).UTC()
		late := []any{int64(1), int64(1000), 1.0, "late", old}
		batches[i] = append(batches[i], late)
		rows = append(rows, late)
	}
	var in []dataflow.Batch
	for i, b := range batches {
		in = append(in, dataflow.Batch{Epoch: dataflow.Epoch(epochs[i]), Record: makeRecord(t, mem, streamSchema, b)})
	}
	ms := float64(time.Millisecond / time.Microsecond)
	funcs := []*logical.WindowFunc{
		{Func: "sum", Args: []expr.Expr{colV}, Partition: []expr.Expr{colK}, Order: []logical.WindowKey{{Expr: colTS}}, DataType: expr.Int64,
			Frame: logical.Frame{Unit: logical.FrameRange, Start: logical.FrameBound{Kind: logical.OffsetPreceding, Offset: 50 * ms, Time: true}, End: logical.FrameBound{Kind: logical.CurrentRow}}},
		{Func: "count", Partition: []expr.Expr{colK}, Order: []logical.WindowKey{{Expr: colTS}}, DataType: expr.Int64,
			Frame: logical.Frame{Unit: logical.FrameRows, Start: logical.FrameBound{Kind: logical.OffsetPreceding, Offset: 4}, End: logical.FrameBound{Kind: logical.CurrentRow}}},
		// From the partition's start (the default frame): running per partition.
		{Func: "max", Args: []expr.Expr{colF}, Partition: []expr.Expr{colK}, Order: []logical.WindowKey{{Expr: colTS}}, DataType: expr.Float64, Frame: logical.DefaultFrame},
		{Func: "avg", Args: []expr.Expr{colV}, Order: []logical.WindowKey{{Expr: colTS}}, DataType: expr.Float64, Frame: logical.DefaultFrame},
	}
	st := &Stats{}
	capt, err := runGraph(t, mem, in, false, func(dataflow.Instance) (dataflow.Operator, error) {
		return NewStreamOver(funcs, []string{"s50", "c5", "maxf", "avgv"}, streamSchema, functions.Builtins(), st)
	})
	defer capt.Release()
	if err != nil {
		t.Fatal(err)
	}
	var got [][]any
	outBatches := 0
	for _, b := range capt.Batches() {
		if b.Record.NumRows() > 0 {
			outBatches++
		}
		got = append(got, recordRows([]arrow.Record{b.Record})...)
	}
	if st.Late.Load() == 0 || int(st.Late.Load())+len(got) != len(rows) {
		t.Fatalf("%d rows out, %d late, of %d", len(got), st.Late.Load(), len(rows))
	}
	for _, r := range got {
		if r[3] == "late" {
			t.Fatalf("a late row came out: %v", r)
		}
	}
	if outBatches < 10 {
		t.Fatalf("%d output batches: rows should come out as the watermark passes them, not at the end", outBatches)
	}
	var want [][]any
	for _, r := range got {
		rt := r[4].(time.Time)
		var sum, maxf any
		var before []time.Time
		var vsum, vn int64
		for _, q := range got {
			if qt := q[4].(time.Time); !qt.After(rt) && q[1] != nil {
				vsum += q[1].(int64)
				vn++
			}
			if !sameKey(q[0], r[0]) {
				continue
			}
			qt := q[4].(time.Time)
			if !qt.After(rt) {
				before = append(before, qt)
				if f := q[2]; f != nil && (maxf == nil || f.(float64) > maxf.(float64)) {
					maxf = f
				}
			}
			if v := q[1]; v != nil && !qt.After(rt) && !qt.Before(rt.Add(-50*time.Millisecond)) {
				if sum == nil {
					sum = int64(0)
				}
				sum = sum.(int64) + v.(int64)
			}
		}
		var avgv any
		if vn > 0 {
			avgv = float64(vsum) / float64(vn)
		}
		want = append(want, append(append([]any(nil), r[:5]...), sum, int64(min(5, len(before))), maxf, avgv))
	}
	sameRows(t, "stream over", got, want)
}

func TestStreamOverRefusesWhatAStreamCannotDo(t *testing.T) {
	rows := logical.Frame{Unit: logical.FrameRows, Start: logical.FrameBound{Kind: logical.OffsetPreceding, Offset: 2}, End: logical.FrameBound{Kind: logical.CurrentRow}}
	for _, f := range []*logical.WindowFunc{
		{Func: "rank", Order: []logical.WindowKey{{Expr: colTS}}, Frame: logical.DefaultFrame},
		{Func: "sum", Args: []expr.Expr{colV}, Order: []logical.WindowKey{{Expr: colTS}}, Frame: logical.Frame{Unit: logical.FrameRows, // past the current row
			Start: logical.FrameBound{Kind: logical.OffsetPreceding, Offset: 1}, End: logical.FrameBound{Kind: logical.OffsetFollowing, Offset: 1}}},
		{Func: "sum", Args: []expr.Expr{colV}, Order: []logical.WindowKey{{Expr: colV}}, Frame: rows}, // not event time
		{Func: "sum", Args: []expr.Expr{colV}, Order: []logical.WindowKey{{Expr: colTS, Desc: true}}, Frame: rows},
	} {
		err := CheckStreamOver([]*logical.WindowFunc{f}, streamSchema)
		var we *WindowError
		if !errors.Is(err, ErrStreamOver) || !errors.As(err, &we) || we.Func != f {
			t.Errorf("%s: %v", f, err)
		}
	}
}
