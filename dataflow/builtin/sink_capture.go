package builtin

import (
	"slices"
	"sync"

	"github.com/tierflow/tierflow/dataflow"
)

// Captured collects what Capture sinks receive. It is safe for concurrent
// use by several sink instances and the test reading it.
type Captured struct {
	mu        sync.Mutex
	batches   []CapturedBatch
	completed []CapturedEpoch
}

// CapturedBatch is one batch as received, with its receiving instance.
type CapturedBatch struct {
	dataflow.Batch
	Instance int
	Input    int
}

// CapturedEpoch records a notification: epoch Epoch complete at Instance,
// and how many batches that instance had captured by then.
type CapturedEpoch struct {
	Epoch    dataflow.Epoch
	Instance int
	Batches  int
}

// Batches returns a copy of the captured batches (records still owned by c).
func (c *Captured) Batches() []CapturedBatch {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.batches)
}

// Completed returns the notifications in delivery order.
func (c *Captured) Completed() []CapturedEpoch {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.completed)
}

// Rows counts the captured rows.
func (c *Captured) Rows() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, b := range c.batches {
		n += b.Record.NumRows()
	}
	return n
}

// Release releases every captured record.
func (c *Captured) Release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.batches {
		b.Record.Release()
	}
	c.batches = nil
}

// Capture is a sink that keeps every batch (on any number of inputs) in a
// Captured and asks to be notified of every epoch it sees, recording when
// each completes: the probe for progress tests.
type Capture struct {
	dataflow.Base
	into *Captured
	inst int
	seen int
}

// NewCapture makes a capture sink for instance inst writing into into.
func NewCapture(into *Captured, inst int) *Capture { return &Capture{into: into, inst: inst} }

func (s *Capture) OnBatch(ctx *dataflow.Context, input int, b dataflow.Batch, cap *dataflow.Capability) error {
	s.into.mu.Lock()
	s.into.batches = append(s.into.batches, CapturedBatch{Batch: b, Instance: s.inst, Input: input})
	s.into.mu.Unlock()
	s.seen++
	return ctx.NotifyAt(cap, b.Epoch)
}

func (s *Capture) OnNotify(_ *dataflow.Context, cap *dataflow.Capability) error {
	s.into.mu.Lock()
	s.into.completed = append(s.into.completed, CapturedEpoch{Epoch: cap.Epoch(), Instance: s.inst, Batches: s.seen})
	s.into.mu.Unlock()
	return nil
}
