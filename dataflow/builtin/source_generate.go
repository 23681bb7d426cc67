package builtin

import (
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/tierflow/tierflow/dataflow"
)

// GenerateFunc makes batch i: its epoch (not less than the previous one)
// and a record allocated from mem that the source then owns.
type GenerateFunc func(i int, mem memory.Allocator) (dataflow.Epoch, arrow.Record, error)

// Generator emits n batches made on demand by fn, so its memory is only
// what downstream has not consumed yet: the source for backpressure tests
// and benchmarks. n < 0 generates until cancelled.
type Generator struct {
	dataflow.Base
	n   int
	i   int
	fn  GenerateFunc
	cap *dataflow.Capability
}

// NewGenerator makes a generator of n batches.
func NewGenerator(n int, fn GenerateFunc) *Generator { return &Generator{n: n, fn: fn} }

func (g *Generator) Open(_ *dataflow.Context, cap *dataflow.Capability) error {
	var err error
	g.cap, err = cap.Retain()
	return err
}

func (g *Generator) Produce(ctx *dataflow.Context) (bool, error) {
	if g.n >= 0 && g.i >= g.n {
		g.cap.Drop()
		return true, nil
	}
	e, rec, err := g.fn(g.i, ctx.Allocator())
	if err != nil {
		return false, err
	}
	g.i++
	if err := g.cap.Downgrade(e); err != nil {
		rec.Release()
		return false, err
	}
	if err := ctx.Emit(0, g.cap, rec); err != nil {
		return false, err
	}
	if g.n >= 0 && g.i >= g.n {
		g.cap.Drop()
		return true, nil
	}
	return false, nil
}
