package dataflow

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/tierflow/tierflow/dataflow/progress"
)

// Operator is the logic of one operator instance. The engine calls its
// methods from one goroutine at a time, never concurrently, in both
// scheduling modes. Embed Base for no-op defaults.
//
// Every callback gets a borrowed Capability: valid until the callback
// returns, for emitting at its epoch. To emit later (or at a later epoch),
// keep an owned one with cap.Retain or cap.Delayed, and Drop it when done:
// an operator's output frontier cannot pass a capability it still holds, so a
// forgotten capability stalls everything downstream.
type Operator interface {
	// Open is called once before anything else, with a capability at epoch
	// 0. Sources retain it; most operators ignore it.
	Open(ctx *Context, cap *Capability) error
	// OnBatch handles one batch arriving on input. The operator owns
	// b.Record (Release it, keep it, or Emit it). cap is at b.Epoch.
	OnBatch(ctx *Context, input int, b Batch, cap *Capability) error
	// OnNotify is called once for each epoch requested with
	// Context.NotifyAt, in increasing epoch order, as soon as that epoch is
	// complete on every input. cap is at that epoch.
	OnNotify(ctx *Context, cap *Capability) error
	// Close is called exactly once at the end: after the instance is done,
	// when a run is cancelled or failed, or when its worker is closed
	// without running (then without Open before it). It must release any
	// records it kept and whatever its constructor acquired.
	Close(ctx *Context) error
}

// Source is an operator the worker polls for data. Produce is called
// repeatedly, each time with room downstream, until it reports done; each
// call should emit a bounded amount (about one batch) so that scheduling
// stays fair and cancellation prompt. When it reports done its remaining
// capabilities are dropped. Only operators without inputs are polled.
type Source interface {
	Operator
	Produce(ctx *Context) (done bool, err error)
}

// FrontierObserver is implemented by operators that want to hear when an
// input frontier advances (e.g. to expire state by watermark) rather than
// request a notification per epoch.
type FrontierObserver interface {
	OnFrontier(ctx *Context, input int, frontier Epoch) error
}

// Waker is implemented by operators that must act without new input after
// a delay they ask for with Context.WakeAfter, e.g. flushing a partial batch
// once a maximum queue delay has passed. To emit there, the operator keeps
// a retained capability for the pending data.
type Waker interface {
	OnWake(ctx *Context) error
}

// Base gives an Operator no-op methods; OnBatch releases the record.
type Base struct{}

func (Base) Open(*Context, *Capability) error { return nil }
func (Base) OnBatch(_ *Context, _ int, b Batch, _ *Capability) error {
	if b.Record != nil {
		b.Record.Release()
	}
	return nil
}
func (Base) OnNotify(*Context, *Capability) error { return nil }
func (Base) Close(*Context) error                 { return nil }

// Capability is the right to emit at an epoch from one operator instance.
// Capabilities may only be used from that instance's callbacks. A capability
// (and a pending notification, which holds one) holds back every output of
// the operator, as in classic timely; connectivity only limits which input
// frontiers an output waits for.
type Capability struct {
	in    *instance
	epoch Epoch
	owned bool
	valid bool
}

// Epoch is the epoch data emitted under c carries.
func (c *Capability) Epoch() Epoch { return c.epoch }

// Valid reports whether c may still be used.
func (c *Capability) Valid() bool { return c != nil && c.valid }

func (c *Capability) check(what string) error {
	if c == nil || !c.valid {
		return fmt.Errorf("%w: %s with a dropped or expired capability", ErrNoCapability, what)
	}
	return nil
}

// Retain returns an owned capability at c's epoch, valid until Dropped.
func (c *Capability) Retain() (*Capability, error) { return c.Delayed(c.epochOrZero()) }

func (c *Capability) epochOrZero() Epoch {
	if c == nil {
		return 0
	}
	return c.epoch
}

// Delayed returns an owned capability at e, which must not be before c's
// epoch (time only moves forward).
func (c *Capability) Delayed(e Epoch) (*Capability, error) {
	if err := c.check("retain"); err != nil {
		return nil, err
	}
	if e < c.epoch || e == Closed {
		return nil, fmt.Errorf("%w: capability at %v cannot produce one at %v", progress.ErrBeforeFrontier, c.epoch, e)
	}
	if err := c.in.tr.Acquire(e); err != nil {
		return nil, err
	}
	n := &Capability{in: c.in, epoch: e, owned: true, valid: true}
	c.in.owned[n] = struct{}{}
	return n, nil
}

// Downgrade moves an owned capability forward to e.
func (c *Capability) Downgrade(e Epoch) error {
	if err := c.check("downgrade"); err != nil {
		return err
	}
	if !c.owned {
		return fmt.Errorf("%w: downgrade of a borrowed capability (Retain it first)", ErrNoCapability)
	}
	if e < c.epoch || e == Closed {
		return fmt.Errorf("%w: downgrade from %v to %v", progress.ErrBeforeFrontier, c.epoch, e)
	}
	if e == c.epoch {
		return nil
	}
	if err := c.in.tr.Acquire(e); err != nil {
		return err
	}
	if err := c.in.tr.Release(c.epoch); err != nil {
		return err
	}
	c.epoch = e
	return nil
}

// Drop gives up an owned capability. Dropping twice, or dropping a borrowed
// capability, does nothing.
func (c *Capability) Drop() {
	if c == nil || !c.valid || !c.owned {
		return
	}
	c.valid = false
	delete(c.in.owned, c)
	_ = c.in.tr.Release(c.epoch)
}

// Context is an operator instance's handle on the engine, passed to every
// callback. It is only valid inside callbacks.
type Context struct {
	in *instance
}

// Instance identifies the running instance.
func (c *Context) Instance() Instance { return c.in.info }

// Allocator is the allocator operators must allocate records from: the
// worker's (Config.Allocator), charging what it makes to this instance's
// output when the worker's charges a budget (OutputAllocator).
func (c *Context) Allocator() memory.Allocator {
	if c.in.alloc == nil {
		c.in.alloc = OutputAllocator(c.in.w.cfg.Allocator, c.in.name())
	}
	return c.in.alloc
}

// Memory is the instance's account of the query's memory budget
// (Config.Memory): what the operator keeps beside its records (hash
// tables, window, session and sort state) it Grows and Shrinks there, and
// a refused Grow (ErrMemory) is its cue to spill, or its error. Without a
// budget the account counts nothing and never refuses.
func (c *Context) Memory() *Account {
	if c.in.acct == nil {
		c.in.acct = c.in.w.cfg.Memory.Account(c.in.name())
	}
	return c.in.acct
}

// Context carries cancellation for long-running work inside a callback.
// For a source it also ends on a graceful stop (Worker.StopSources): a
// Produce blocked waiting for input should select on it and return.
func (c *Context) Context() context.Context {
	if c.in.src != nil {
		return c.in.srcCtx
	}
	return c.in.ctx
}

// InputFrontier is the smallest epoch input i may still deliver.
func (c *Context) InputFrontier(i int) Epoch { return c.in.tr.InputFrontier(i) }

// Frontier is the smallest epoch any input may still deliver; epochs below
// it are complete.
func (c *Context) Frontier() Epoch { return c.in.tr.Frontier() }

// Emit sends rec on output at cap's epoch. It takes ownership of rec in all
// cases. Emitting without a valid capability of this instance is an
// ErrNoCapability error. In concurrent mode Emit blocks while a receiver's
// queue is full. Records with no rows are dropped.
func (c *Context) Emit(output int, cap *Capability, rec arrow.Record) error {
	return c.EmitIngest(output, cap, rec, c.Ingest())
}

// Ingest is the ingest time (Unix ns) Emit stamps on what it sends now:
// inside OnBatch the arriving batch's, so row-at-a-time operators (filters,
// projections, a join's probe, a union) pass it on; in a source's Produce
// the current time (the rows enter the query here; with Config.Latency,
// otherwise 0: unknown); in OnNotify, OnFrontier
// and OnWake the latest ingest time the instance has received, so a window
// or a windowed join that emits when the watermark closes it stamps its
// result with when the data that closed the window arrived (its latency is
// then the engine's, not the window's length or the allowed lateness).
// Operators that hold rows back and know better (a model call's queued
// batches) use EmitIngest with their own.
func (c *Context) Ingest() int64 {
	in := c.in
	switch {
	case in.ingest != 0:
		return in.ingest
	case in.src != nil && in.w.cfg.Latency:
		return in.w.epochNs + int64(in.w.mono())
	}
	return in.maxIngest
}

// EmitIngest is Emit with an explicit ingest time (Unix ns; 0: unknown).
func (c *Context) EmitIngest(output int, cap *Capability, rec arrow.Record, ingest int64) error {
	in := c.in
	if err := cap.check("emit"); err != nil {
		rec.Release()
		return fmt.Errorf("%s: %w", in.name(), err)
	}
	if cap.in != in {
		rec.Release()
		return fmt.Errorf("%w: %s: capability of another operator instance", ErrNoCapability, in.name())
	}
	if output < 0 || output >= len(in.outs) {
		rec.Release()
		return fmt.Errorf("%w: %s: emit on output %d of %d", ErrInvalidGraph, in.name(), output, len(in.outs))
	}
	if rec.NumRows() == 0 {
		rec.Release()
		return nil
	}
	// Between two batches a long step waits at its query's turn (a
	// batch's length is the finest a step can be cut at from outside).
	if err := in.turn.yield(in.ctx); err != nil {
		rec.Release()
		return err
	}
	in.stats.batchesOut.Add(1)
	in.stats.rowsOut.Add(rec.NumRows())
	if in.src != nil && in.w.cfg.Timing {
		// A source's data starts here; everything downstream is timed
		// where its batches arrive.
		in.stats.touch(in.w.epochNs + int64(in.w.mono()))
	}
	edges := in.outs[output]
	if len(edges) == 0 {
		rec.Release()
		return nil
	}
	for i, oe := range edges {
		if i < len(edges)-1 {
			rec.Retain()
		}
		if err := oe.send(in, cap.epoch, ingest, rec); err != nil {
			for j := i + 1; j < len(edges); j++ {
				rec.Release()
			}
			return err
		}
	}
	return nil
}

// StopSources asks for the graceful end of the whole run: every source
// stops and the rest drains (Config.RequestStop). An operator that has all
// it needs (a LIMIT that is full) calls it so that an endless stream ends.
func (c *Context) StopSources() {
	if f := c.in.w.cfg.RequestStop; f != nil {
		f()
		return
	}
	c.in.w.StopSources()
}

// Now is the worker's clock (Config.Now).
func (c *Context) Now() time.Time { return c.in.w.cfg.Now() }

// WakeAfter asks for one OnWake call once d has passed on the worker's
// clock, even if no input arrives. An earlier pending wake-up wins; the
// request is cleared when it fires. The operator must implement Waker,
// except a source: a source that asks to be woken is not polled until then
// (a rate-limited source sleeps this way instead of blocking in Produce).
func (c *Context) WakeAfter(d time.Duration) error {
	in := c.in
	if in.waker == nil && in.src == nil {
		return fmt.Errorf("%w: %s asks to be woken but does not implement Waker", ErrInvalidGraph, in.name())
	}
	at := in.w.cfg.Now().Add(d)
	if in.wakeAt.IsZero() || at.Before(in.wakeAt) {
		in.wakeAt = at
	}
	return nil
}

// NotifyAt asks for OnNotify at epoch e (not before cap's epoch) once e is
// complete on all inputs. Until then the engine holds a capability at e for
// the operator. Repeated requests for one epoch merge.
func (c *Context) NotifyAt(cap *Capability, e Epoch) error {
	if err := cap.check("notify"); err != nil {
		return fmt.Errorf("%s: %w", c.in.name(), err)
	}
	if e < cap.epoch {
		return fmt.Errorf("%w: %s: notification at %v under a capability at %v", progress.ErrBeforeFrontier, c.in.name(), e, cap.epoch)
	}
	return c.in.tr.RequestNotify(e)
}
