package ml

import (
	"fmt"
	"sync/atomic"
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
	// counts are the batches as the batcher cut them, for InstanceStats
	// (read from other goroutines while the operator runs).
	counts batchCounts

	// Deadline, when > 0, is the query's LATENCY bound: an input batch
	// whose deadline (its ingest time + Deadline) can no longer be met by
	// a call of one row is dropped before compute (Jellyfish 5: lazy
	// drop), counted in drops as dataflow.DropDeadline. A batch's ingest
	// time is its oldest row's, so the drop is by input batch; sources of
	// latency-bound streams send small batches.
	Deadline time.Duration
	// SoloMs, when set, is the profiled latency of a one-row call of the
	// running variant (the catalog's by-batch profile); without it the
	// fastest one-row call the batcher measured is used. A batch whose
	// rows all run on a side variant takes that variant's (SideVariant).
	SoloMs float64
	drops  *dataflow.Drops

	// Pre, when set, makes each input record into the one the Model is
	// bound to (encoded images into tensors); Post turns each output
	// record into the query's rows (a detector's boxes, a recogniser's
	// text). Both run on this worker: their hidden columns never cross a
	// link.
	Pre, Post Step
}

// batchCounts say how the batcher cut: on reaching its target size (rows
// waited less than MaxDelay), on MaxDelay, or at the end of the input; and
// the target it was holding at the last cut (MaxBatch when not adaptive).
type batchCounts struct {
	batches, rows, maxBatch, target  atomic.Int64
	bySize, byDelay, byFlush, waitUs atomic.Int64
	deadline                         atomic.Int64
}

// Counters report the batching (dataflow.Counting): model_batches,
// model_rows, model_batch_max, batch_target, cut_size, cut_delay, cut_flush
// queue_wait_us (the total wait of each batch's oldest row),
// deadline_dropped (rows dropped lazily past the LATENCY bound) and, under
// a LATENCY bound or with side variants, ran_<variant>: the rows each
// variant ran (the bound one named by Attrs["variant"]), so that a query's
// generations, each on its own variant, add up.
func (o *Operator) Counters() map[string]int64 {
	c := &o.counts
	out := map[string]int64{
		"model_batches": c.batches.Load(), "model_rows": c.rows.Load(), "model_batch_max": c.maxBatch.Load(),
		"batch_target": c.target.Load(), "cut_size": c.bySize.Load(), "cut_delay": c.byDelay.Load(),
		"cut_flush": c.byFlush.Load(), "queue_wait_us": c.waitUs.Load(), "deadline_dropped": c.deadline.Load(),
	}
	if o.Deadline <= 0 && len(o.m.alts) == 0 {
		return out
	}
	bound := o.Attrs["variant"]
	if bound == "" {
		bound = "bound"
	}
	for name, n := range o.m.VariantRows(bound) {
		out[RanPrefix+name] = n
	}
	return out
}

// Attributes are Attrs.
func (o *Operator) Attributes() map[string]string { return o.Attrs }

type pendingBatch struct {
	j       *job
	charged int64 // the job's owned bytes, charged to the instance's account
	cap     *dataflow.Capability
	taken   int
	ingest  int64 // the input batch's ingest time, which its output keeps
	dropped bool  // past its deadline: released, never emitted
}

var (
	_ dataflow.Operator         = (*Operator)(nil)
	_ dataflow.Waker            = (*Operator)(nil)
	_ dataflow.FrontierObserver = (*Operator)(nil)
	_ dataflow.Counting         = (*Operator)(nil)
	_ dataflow.Dropping         = (*Operator)(nil)
)

// CountDropsIn counts the operator's lazy drops in the query's d.
func (o *Operator) CountDropsIn(d *dataflow.Drops) { o.drops = d }

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
	rec := in.Record
	if o.Pre != nil {
		pre, err := o.Pre.Apply(ctx.Allocator(), rec)
		rec.Release()
		if err != nil {
			return err
		}
		rec = pre
	}
	j, err := o.m.newJob(ctx.Allocator(), rec)
	rec.Release() // the job holds its own reference
	if err != nil {
		return err
	}
	// While it waits for its model batch the job's own values are the
	// query's memory: a queue of frames widened to float32 holds 4x their
	// bytes, which no allocator saw.
	if err := ctx.Memory().Grow(j.owned); err != nil {
		j.release()
		return fmt.Errorf("%d rows waiting for the model: %w", o.queued()+j.n, err)
	}
	owned, err := cap.Retain()
	if err != nil {
		ctx.Memory().Shrink(j.owned)
		j.release()
		return err
	}
	o.pending = append(o.pending, &pendingBatch{j: j, cap: owned, ingest: in.Ingest, charged: j.owned})
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

// queued is the rows of the pending batches.
func (o *Operator) queued() int {
	n := 0
	for _, p := range o.pending {
		n += p.j.n
	}
	return n
}

// Close releases what is still pending (a cancelled run).
func (o *Operator) Close(ctx *dataflow.Context) error {
	for _, p := range o.pending {
		p.j.release()
		p.cap.Drop()
		ctx.Memory().Shrink(p.charged)
	}
	o.pending = nil
	return nil
}

func (o *Operator) pump(ctx *dataflow.Context, flush bool) error {
	for {
		now := ctx.Now()
		o.dropLate(now)
		oldest, _ := o.b.Oldest()
		dl, _ := o.b.Deadline()
		due := !now.Before(dl)
		n := o.b.Cut(now)
		cut := &o.counts.bySize
		if n > 0 && due {
			cut = &o.counts.byDelay
		}
		if n == 0 && flush {
			n, cut = o.b.Flush(), &o.counts.byFlush
		}
		if n == 0 {
			break
		}
		cut.Add(1)
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
	c := &o.counts
	c.batches.Add(1)
	c.rows.Add(int64(rows))
	c.maxBatch.Store(int64(o.stats.MaxBatch))
	c.target.Store(int64(o.b.Target()))
	c.waitUs.Add(waited.Microseconds())
}

// dropLate drops, before compute, the input batches at the head of the
// queue whose deadline a one-row call started now would miss. They are the
// oldest waiting rows (batches queue in arrival order), so the first batch
// that can still make it ends the scan; a batch already partly in a model
// batch runs to the end.
func (o *Operator) dropLate(now time.Time) {
	if o.Deadline <= 0 {
		return
	}
	solo := time.Duration(o.SoloMs * float64(time.Millisecond))
	if o.SoloMs <= 0 {
		// The fastest one-row call seen, not the smoothed one: one call a
		// stall stretched past the bound would make the smoothed estimate
		// drop every later batch, none would run to bring it down, and the
		// query would drop all its rows from then on (bench shared saw
		// real-time runs lose 80-90% of their rows to this on a loaded
		// machine). A row is dropped when even the fastest call misses.
		solo, _ = o.b.Fastest(1)
	}
	for _, p := range o.pending {
		if p.taken == p.j.n {
			continue // in a model batch already, or dropped
		}
		d := solo
		if ms, ok := o.m.soloMs(p.j); ok {
			d = time.Duration(ms * float64(time.Millisecond))
		}
		if p.taken > 0 || p.ingest == 0 || !now.Add(d).After(time.Unix(0, p.ingest).Add(o.Deadline)) {
			return
		}
		// Every earlier batch's rows have left the batcher's queue, so
		// its head holds exactly this batch's rows.
		o.b.take(p.j.n)
		p.taken, p.dropped = p.j.n, true
		o.counts.deadline.Add(int64(p.j.n))
		o.drops.AddAt(dataflow.DropDeadline, epochOf(p.cap), int64(p.j.n))
	}
}

// emit sends the finished batches at the head, in arrival order (a dropped
// one is released, and its capability with it).
func (o *Operator) emit(ctx *dataflow.Context) error {
	for len(o.pending) > 0 && (o.pending[0].dropped || o.pending[0].j.done == o.pending[0].j.n) {
		p := o.pending[0]
		o.pending[0] = nil
		o.pending = o.pending[1:]
		ctx.Memory().Shrink(p.charged)
		if p.dropped {
			p.j.release()
			p.cap.Drop()
			continue
		}
		// Emitted from a later callback (a wake-up, another batch), the
		// output keeps its own input's ingest time, not the latest one.
		out := p.j.finish(ctx.Allocator())
		if o.Post != nil {
			post, err := o.Post.Apply(ctx.Allocator(), out)
			out.Release()
			if err != nil {
				p.cap.Drop()
				return err
			}
			out = post
		}
		err := ctx.EmitIngest(0, p.cap, out, p.ingest)
		p.cap.Drop()
		if err != nil {
			return err
		}
	}
	return nil
}

// epochOf is the epoch of cap's rows (0 without one: a test's queue).
func epochOf(cap *dataflow.Capability) dataflow.Epoch {
	if cap == nil {
		return 0
	}
	return cap.Epoch()
}
