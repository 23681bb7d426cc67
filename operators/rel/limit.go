package rel

import (
	"github.com/tierflow/tierflow/dataflow"
)

// Limit passes the first N rows (in arrival order) and drops the rest.
type Limit struct {
	dataflow.Base
	left int64
}

// NewLimit makes a limit instance; run it with parallelism 1.
func NewLimit(n int64) *Limit { return &Limit{left: n} }

func (l *Limit) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, cap *dataflow.Capability) error {
	rec := b.Record
	if l.left <= 0 {
		rec.Release()
		return nil
	}
	if rec.NumRows() > l.left {
		out := rec.NewSlice(0, l.left)
		rec.Release()
		rec = out
	}
	l.left -= rec.NumRows()
	return ctx.Emit(0, cap, rec)
}
