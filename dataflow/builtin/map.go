package builtin

import (
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/tierflow/tierflow/dataflow"
)

// MapFunc transforms one batch's record. It owns in (release it or return
// it) and returns a record the caller then owns; nil drops the batch.
type MapFunc func(ctx *dataflow.Context, epoch dataflow.Epoch, in arrow.Record) (arrow.Record, error)

// Map applies fn to each batch of its single input and emits the result on
// its single output at the same epoch. A nil fn passes records through
// (a no-op operator, for benchmarks).
type Map struct {
	dataflow.Base
	fn MapFunc
}

// NewMap makes a map operator.
func NewMap(fn MapFunc) *Map { return &Map{fn: fn} }

func (m *Map) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, cap *dataflow.Capability) error {
	rec := b.Record
	if m.fn != nil {
		var err error
		if rec, err = m.fn(ctx, b.Epoch, rec); err != nil || rec == nil {
			return err
		}
	}
	return ctx.Emit(0, cap, rec)
}
