package ml

import (
	"time"

	"github.com/tierflow/tierflow/dataflow"
)

// Operator is the ML inference operator on the dataflow engine: a Model behind a
// Batcher. Rows of consecutive input batches are grouped into model batches cut on
// size or queue delay (the engine wakes the operator at the delay deadline), each
// input batch comes out as one output batch at its own epoch and in arrival
// order, and a capability is held per pending batch so the output frontier waits
// for it. The model runs in the operator's callbacks, so "the model is free"
// whenever a callback runs.
type Operator struct {
	dataflow.Base
	m       *Model
	b       *Batcher
	pending []*pendingBatch
	stats   RunnerStats
	// Attrs describe the call in the instance stats (dataflow.Attributed):
	// the runtime sets its variant and device.
	Attrs map[string]string
}

// Attributes are Attrs.
func (o *Operator) Attributes() map[string]string { return o.Attrs }

type pendingBatch struct {
	j      *job
	cap    *dataflow.Capability
	taken  int
	ingest int64 // the input batch's ingest time, which its output keeps
}

var (
	_ dataflow.Operator         = (*Operator)(nil)
	_ dataflow.Waker            = (*Operator)(nil)
	_ dataflow.FrontierObserver = (*Operator)(nil)
)

// NewOperator makes one operator instance over m (each instance needs its own
// Model; they may share the Session).
func NewOperator(m *Model, cfg BatchConfig) (*Operator, error) {
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = m.MaxBatch()
	}
	cfg.MaxBatch = min(cfg.MaxBatch, max(m.MaxBatch(), 1))
	b, err := NewBatcher(cfg)
	if err != nil {
		return nil, err
	}
	return &Operator{m: m, b: b}, nil
}

// Stats describe the batches run so far.
func (o *Operator) Stats() RunnerStats { return o.stats }

func (o *Operator) OnBatch(ctx *dataflow.Context, _ int, in dataflow.Batch, cap *dataflow.Capability) error {
	j, err := o.m.newJob(ctx.Allocator(), in.Record)
	in.Record.Release() // the job holds its own reference
	if err != nil {
		return err
	}
	owned, err := cap.Retain()
	if err != nil {
		j.release()
		return err
	}
	o.pending = append(o.pending, &pendingBatch{j: j, cap: owned, ingest: in.Ingest})
	o.b.Push(ctx.Now(), j.n)
	return o.pump(ctx, false)
}

// OnWake runs when the oldest row's MaxDelay has passed.
func (o *Operator) OnWake(ctx *dataflow.Context) error { return o.pump(ctx, false) }

// OnFrontier flushes everything once the input is closed: no row will come to
// fill the batch.
func (o *Operator) OnFrontier(ctx *dataflow.Context, _ int, f dataflow.Epoch) error {
	return o.pump(ctx, f == dataflow.Closed)
}

// Close releases what is still pending (a cancelled run).
func (o *Operator) Close(*dataflow.Context) error {
	for _, p := range o.pending {
		p.j.release()
		p.cap.Drop()
	}
	o.pending = nil
	return nil
}

func (o *Operator) pump(ctx *dataflow.Context, flush bool) error {
	for {
		now := ctx.Now()
		oldest, _ := o.b.Oldest()
		n := o.b.Cut(now)
		if n == 0 && flush {
			n = o.b.Flush()
		}
		if n == 0 {
			break
		}
		o.run(ctx, n, now.Sub(oldest))
		if err := o.emit(ctx); err != nil {
			return err
		}
	}
	if err := o.emit(ctx); err != nil {
		return err
	}
	if dl, ok := o.b.Deadline(); ok {
		return ctx.WakeAfter(max(dl.Sub(ctx.Now()), 0))
	}
	return nil
}

func (o *Operator) run(ctx *dataflow.Context, n int, waited time.Duration) {
	var segs []segment
	for _, p := range o.pending {
		if n == 0 {
			break
		}
		if p.taken == p.j.n {
			continue
		}
		segs = appendSegment(segs, p.j, &p.taken, &n)
	}
	rows, _ := runSegments(o.m, o.b, segs, ctx.Now)
	o.stats.addBatch(rows, waited, o.b)
}

// emit sends the finished batches at the head, in arrival order.
func (o *Operator) emit(ctx *dataflow.Context) error {
	for len(o.pending) > 0 && o.pending[0].j.done == o.pending[0].j.n {
		p := o.pending[0]
		o.pending[0] = nil
		o.pending = o.pending[1:]
		// Emitted from a later callback (a wake-up, another batch), the
		// output keeps its own input's ingest time, not the latest one.
		err := ctx.EmitIngest(0, p.cap, p.j.finish(ctx.Allocator()), p.ingest)
		p.cap.Drop()
		if err != nil {
			return err
		}
	}
	return nil
}
