package rel

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/internal/arrowx"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// Window functions over a whole input (NewWindowFuncsAtEndWithin) spill
// as a grace hash does: a function answers each partition from its rows
// alone, so once the rows held pass the operator's limit, or its query's
// budget is half full (spillsOnce, as a join's table), they go to
// SpillPartitions files by a
// hash of the PARTITION BY every function shares, and when the input ends
// each file's rows are answered on their own: whole partitions, about
// 1/SpillPartitions of the rows. Functions with no PARTITION BY in common
// (one over the whole input) hold every row, as before. The rows come out
// a file at a time, not in the input's order (none is promised without an
// ORDER BY).

// NewWindowFuncsAtEndWithin is NewWindowFuncsAtEnd that spills by the
// functions' common PARTITION BY past limit bytes held (0: only when its
// query's budget is half full); stats may be nil.
func NewWindowFuncsAtEndWithin(funcs []*logical.WindowFunc, names []string, in *arrow.Schema, fns *functions.Registry, limit int64, stats *SpillStats) (*WindowFuncs, error) {
	w, err := NewWindowFuncsAtEnd(funcs, names, in, fns)
	if err != nil {
		return nil, err
	}
	keys := commonPartition(funcs)
	if len(keys) == 0 {
		return w, nil
	}
	sp := &windowSpill{limit: limit, stats: stats}
	for _, k := range keys {
		ev, err := eval.Compile(k, in, fns)
		if err != nil {
			return nil, err
		}
		sp.keys = append(sp.keys, ev)
	}
	w.spill = sp
	return w, nil
}

// commonPartition is the PARTITION BY expressions every function has.
func commonPartition(funcs []*logical.WindowFunc) []expr.Expr {
	if len(funcs) == 0 {
		return nil
	}
	var out []expr.Expr
	for _, p := range funcs[0].Partition {
		all := true
		for _, f := range funcs[1:] {
			found := false
			for _, q := range f.Partition {
				if q.String() == p.String() && arrow.TypeEqual(q.Type(), p.Type()) {
					found = true
					break
				}
			}
			all = all && found
		}
		if all {
			out = append(out, p)
		}
	}
	return out
}

// windowSpill is a WindowFuncs' partition files.
type windowSpill struct {
	limit int64
	stats *SpillStats
	keys  []*eval.Evaluator // the common PARTITION BY
	held  int64
	dir   string
	parts []*spillFile // nil until the rows spill
}

// over counts rec as held and reports whether the rows held go to disk
// (spillsOnce).
func (sp *windowSpill) over(acct *dataflow.Account, rec arrow.Record) bool {
	sp.held += arrowx.RecordBytes(rec)
	used, budget := acct.Budget()
	return spillsOnce(sp.limit, sp.held, used, budget)
}

// spillHeld moves the rows held to the partition files; from now on every
// batch goes there as it comes.
func (w *WindowFuncs) spillHeld(ctx *dataflow.Context) error {
	sp := w.spill
	dir, err := os.MkdirTemp("", "tierflow-window-spill-*")
	if err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	sp.dir = dir
	c := w.c.get(ctx)
	for i := range SpillPartitions {
		p, err := createSpillFile(dir, filepath.Join(dir, fmt.Sprintf("%d.arrow", i)), w.w.in, c.Mem)
		if err != nil {
			return err
		}
		sp.parts = append(sp.parts, p)
	}
	recs := w.pending[0]
	delete(w.pending, 0)
	defer releaseAll(recs)
	for _, r := range recs {
		if err := w.write(ctx, r); err != nil {
			return err
		}
	}
	if sp.stats != nil {
		sp.stats.Spills.Add(1)
	}
	return nil
}

// write sends rec's rows to the partition files by their PARTITION BY.
func (w *WindowFuncs) write(ctx *dataflow.Context, rec arrow.Record) error {
	sp, c := w.spill, w.c.get(ctx)
	n := rec.NumRows()
	if n == 0 {
		return nil
	}
	cols := make([]arrow.Array, len(sp.keys))
	defer func() { releaseArrays(cols) }()
	fields := make([]arrow.Field, len(sp.keys))
	idx := make([]int, len(sp.keys))
	for i, ev := range sp.keys {
		a, err := ev.Eval(c, rec)
		if err != nil {
			return err
		}
		cols[i] = a
		fields[i] = arrow.Field{Name: fmt.Sprint("k", i), Type: a.DataType(), Nullable: true}
		idx[i] = i
	}
	keys := array.NewRecord(arrow.NewSchema(fields, nil), cols, n)
	defer keys.Release()
	dst := make([]uint32, n)
	if err := dataflow.HashColumns(idx...)(keys, SpillPartitions, dst); err != nil {
		return err
	}
	if err := writeSplit(c.Mem, sp.parts, rec, dst); err != nil {
		return err
	}
	if sp.stats != nil {
		sp.stats.Rows.Add(n)
	}
	return nil
}

// emitSpilled answers each partition file's rows on their own.
func (w *WindowFuncs) emitSpilled(ctx *dataflow.Context, cap *dataflow.Capability) error {
	sp := w.spill
	for _, p := range sp.parts {
		if err := p.finish(); err != nil {
			return err
		}
	}
	for _, p := range sp.parts {
		var recs []arrow.Record
		err := readSpill(w.c.get(ctx).Mem, p.f, func(r arrow.Record) error {
			r.Retain()
			recs = append(recs, r)
			return nil
		})
		if err != nil {
			releaseAll(recs)
			return err
		}
		if err := w.emit(ctx, cap, recs); err != nil {
			return err
		}
	}
	return nil
}

// close removes the partition files.
func (sp *windowSpill) close() {
	if sp == nil || sp.dir == "" {
		return
	}
	for _, p := range sp.parts {
		p.f.Close()
	}
	sp.parts = nil
	os.RemoveAll(sp.dir)
	sp.dir = ""
}
