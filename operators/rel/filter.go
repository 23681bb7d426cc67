package rel

import (
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
