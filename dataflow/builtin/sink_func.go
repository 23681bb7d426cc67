package builtin

import (
	"github.com/tierflow/tierflow/dataflow"
)

// Sink calls fn for every batch and then releases its record: a counting or
// slow consumer for tests and benchmarks. fn must not keep the record
// without retaining it.
type Sink struct {
	dataflow.Base
	fn func(dataflow.Batch) error
}

// NewSink makes a sink; a nil fn just discards.
func NewSink(fn func(dataflow.Batch) error) *Sink { return &Sink{fn: fn} }

func (s *Sink) OnBatch(_ *dataflow.Context, _ int, b dataflow.Batch, _ *dataflow.Capability) error {
	defer b.Record.Release()
	if s.fn != nil {
		return s.fn(b)
	}
	return nil
}
