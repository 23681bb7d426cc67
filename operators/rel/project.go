package rel

import (
	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/eval"
)

// Project computes its output columns from each input batch.
type Project struct {
	dataflow.Base
	proj *eval.Projection
	c    opCtx
}

// NewProject makes a projection instance.
func NewProject(p *eval.Projection) *Project { return &Project{proj: p} }

func (p *Project) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, cap *dataflow.Capability) error {
	out, err := p.proj.Apply(p.c.get(ctx), b.Record)
	b.Record.Release()
	if err != nil {
		return err
	}
	return ctx.Emit(0, cap, out)
}
