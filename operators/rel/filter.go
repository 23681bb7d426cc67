package rel

import (
	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/eval"
)

// Filter passes the rows for which its predicate is TRUE.
type Filter struct {
	dataflow.Base
	pred  *eval.Predicate
	c     opCtx
	stats *Stats
}

// NewFilter makes a filter instance; stats may be nil.
func NewFilter(pred *eval.Predicate, stats *Stats) *Filter {
	return &Filter{pred: pred.Clone(), stats: stats}
}

func (f *Filter) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, cap *dataflow.Capability) error {
	out, err := f.pred.Filter(f.c.get(ctx), b.Record)
	if f.stats != nil {
		f.stats.RowsIn.Add(b.Record.NumRows())
	}
	b.Record.Release()
	if err != nil || out == nil {
		return err
	}
	if f.stats != nil {
		f.stats.RowsOut.Add(out.NumRows())
	}
	return ctx.Emit(0, cap, out)
}

// FilterProject passes columns of the rows for which its predicate is TRUE:
// the predicate reads the whole batch, and only the projection's columns
// (column references, passed through) of the passing rows are gathered.
// A column only the predicate reads (a LIKE's text) is never copied.
type FilterProject struct {
	dataflow.Base
	pred  *eval.Predicate
	proj  *eval.Projection
	c     opCtx
	stats *Stats
}

// NewFilterProject makes a filter instance whose output is proj's columns;
// stats may be nil.
func NewFilterProject(pred *eval.Predicate, proj *eval.Projection, stats *Stats) *FilterProject {
	return &FilterProject{pred: pred.Clone(), proj: proj, stats: stats}
}

func (f *FilterProject) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, cap *dataflow.Capability) error {
	c := f.c.get(ctx)
	rows := b.Record.NumRows()
	sel, all, err := f.pred.Select(c, b.Record)
	var out arrow.Record
	if err == nil && (all || len(sel) > 0) {
		var cols arrow.Record
		cols, err = f.proj.Apply(c, b.Record)
		if err == nil && all {
			out = cols
		} else if err == nil {
			out, err = eval.GatherRecord(c.Context(), c.Mem, cols, sel)
			cols.Release()
		}
	}
	b.Record.Release()
	if f.stats != nil {
		f.stats.RowsIn.Add(rows)
	}
	if err != nil || out == nil {
		return err
	}
	if f.stats != nil {
		f.stats.RowsOut.Add(out.NumRows())
	}
	return ctx.Emit(0, cap, out)
}
