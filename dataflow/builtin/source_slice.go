package builtin

import (
	"fmt"

	"github.com/tierflow/tierflow/dataflow"
)

// SliceSource emits the given batches in order, one per Produce, then
// finishes. A batch with an ingest time keeps it (a replayed recording); the
// others are stamped as they go out. Epochs must not decrease: the source downgrades its capability
// to each batch's epoch, so downstream sees epoch e complete as soon as the
// next batch is at a later epoch. It owns the records until they are emitted
// and releases the unsent ones on Close.
type SliceSource struct {
	dataflow.Base
	batches []dataflow.Batch
	next    int
	cap     *dataflow.Capability
}

// NewSliceSource takes ownership of the batches' records.
func NewSliceSource(batches []dataflow.Batch) *SliceSource {
	return &SliceSource{batches: batches}
}

func (s *SliceSource) Open(_ *dataflow.Context, cap *dataflow.Capability) error {
	var err error
	s.cap, err = cap.Retain()
	return err
}

func (s *SliceSource) Produce(ctx *dataflow.Context) (bool, error) {
	if s.next >= len(s.batches) {
		s.cap.Drop()
		return true, nil
	}
	b := s.batches[s.next]
	s.batches[s.next].Record = nil
	s.next++
	if b.Epoch < s.cap.Epoch() {
		b.Record.Release()
		return false, fmt.Errorf("batch %d at epoch %v after epoch %v", s.next-1, b.Epoch, s.cap.Epoch())
	}
	if err := s.cap.Downgrade(b.Epoch); err != nil {
		b.Record.Release()
		return false, err
	}
	ingest := b.Ingest
	if ingest == 0 {
		ingest = ctx.Ingest()
	}
	if err := ctx.EmitIngest(0, s.cap, b.Record, ingest); err != nil {
		return false, err
	}
	if s.next == len(s.batches) {
		s.cap.Drop()
		return true, nil
	}
	return false, nil
}

func (s *SliceSource) Close(*dataflow.Context) error {
	for i := s.next; i < len(s.batches); i++ {
		if r := s.batches[i].Record; r != nil {
			r.Release()
			s.batches[i].Record = nil
		}
	}
	s.next = len(s.batches)
	return nil
}
