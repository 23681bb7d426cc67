package rel

import (
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/tierflow/tierflow/dataflow"
)

// UnionAll forwards the batches of all its inputs, relabelled with one output
// schema (inputs have the same column types; names come from the first).
type UnionAll struct {
	dataflow.Base
	schema *arrow.Schema
}

// NewUnionAll makes a union instance producing schema.
func NewUnionAll(schema *arrow.Schema) *UnionAll { return &UnionAll{schema: schema} }

func (u *UnionAll) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, cap *dataflow.Capability) error {
	rec := b.Record
	if !rec.Schema().Equal(u.schema) {
		cols := rec.Columns()
		out := array.NewRecord(u.schema, cols, rec.NumRows())
		rec.Release()
		rec = out
	}
	return ctx.Emit(0, cap, rec)
}
