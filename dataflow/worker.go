package dataflow

import (
	"context"
	"errors"
	"fmt"
	"runtime/trace"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/tierflow/tierflow/dataflow/progress"
)

// Config holds what a worker needs besides the graph.
type Config struct {
	// Allocator for every record the engine or its operators allocate.
	// Default memory.DefaultAllocator.
	Allocator memory.Allocator
	// QueueLen bounds each operator instance's inbox, in messages, when
	// running concurrently. Default 16.
	QueueLen int
	// Now is the clock for WakeAfter; default time.Now. Tests that step
	// workers inject a fake clock to make wake-ups deterministic.
	Now func() time.Time
	// Stop, when closed, stops the sources gracefully (see
	// Worker.StopSources): the dataflow drains and Run returns nil.
	Stop <-chan struct{}
	// Timing times every callback: busy time, the batch latency histogram,
	// when data first and last passed (InstanceStats). EXPLAIN ANALYZE
	// turns it on; off, a batch costs two clock reads and a handful of
	// atomic adds less per operator, which shows on small batches.
	Timing bool
	// RequestStop is what an operator's Context.StopSources does: stop
	// every source of the run, wherever it runs (Run stops its workers; a
	// cluster worker asks its coordinator). Nil: this worker's sources.
	RequestStop func()
	// Latency stamps every batch a source emits with its ingest time and
	// has sinks measure each row's end-to-end latency
	// (InstanceStats.EndToEnd). It costs a clock read at each end of a
	// batch's trip, which shows on small batches in one process: the
	// cluster's workers turn it on, the one-process executor leaves it off.
	// Batches that arrive stamped are measured either way.
	Latency bool
	// LatencySLO, when set, is the query's LATENCY bound: sinks count the
	// rows whose end-to-end latency exceeds it (InstanceStats.SLOMissRows).
	LatencySLO time.Duration
	// OnLatency, when set, is told every end-to-end latency a sink
	// measures, exactly (the histogram's buckets are 19% wide): what a
	// benchmark compares percentiles by.
	OnLatency func(d time.Duration, rows int64)
	// OnResult, when set, is told every batch a sink has written with its
	// end-to-end latency (one ingest stamp per batch, so one latency for
	// all its rows): what a benchmark that scores each answer by whether
	// it came in time reads. The record is valid only during the call.
	OnResult func(d time.Duration, rec arrow.Record)
	// Transport carries channels between workers. BuildLocal and Run
	// default it to a fresh LocalTransport; NewWorker requires it when the
	// worker exchanges data with others.
	Transport Transport
	// Memory, when set, is the query's memory budget on this worker: each
	// operator instance's state is an Account of it (Context.Memory), and
	// Allocator should be its Allocator. Nil: state is not counted.
	Memory *Memory
	// CPU, when set, is the query's share of its worker's processors:
	// each instance's step waits for the query's turn (see CPU), so that
	// queries sharing a worker share its CPU fairly. Run only; Step does
	// not wait. Nil: steps run as they come.
	CPU *CPUShare
}

func (c Config) withDefaults() Config {
	if c.Allocator == nil {
		c.Allocator = memory.DefaultAllocator
	}
	if c.QueueLen <= 0 {
		c.QueueLen = 16
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Worker runs the operator instances a Graph places on one worker. Use
// either Step (deterministic, in the caller's goroutine) or Run (one
// goroutine per instance), not both.
type Worker struct {
	id      int
	g       *Graph
	cfg     Config
	insts   []*instance // topological order
	err     error
	closed  bool
	running bool

	stopMu   sync.Mutex
	stopped  bool
	stopping []context.CancelFunc // cancel running sources' contexts

	// epoch anchors the instances' timings: time.Since(epoch) reads only
	// the monotonic clock, half the price of time.Now, and the stats turn
	// it into wall time (Unix ns) as epochNs plus the offset.
	epoch   time.Time
	epochNs int64

	// res pairs batches from other workers with their results here.
	res residence
}

// mono is the time since the worker was made, from the monotonic clock.
func (w *Worker) mono() time.Duration { return time.Since(w.epoch) }

// instance is one operator instance with its progress state and channels.
type instance struct {
	w        *Worker
	info     Instance
	op       Operator
	src      Source
	obs      FrontierObserver
	waker    Waker
	wakeAt   time.Time // zero: no wake-up requested
	srcDone  bool
	tr       *progress.Tracker
	q        *queue
	inputs   []*inEdge    // by edge index; nil where the edge does not feed us
	outs     [][]*outEdge // by output port
	owned    map[*Capability]struct{}
	ctx      context.Context // the run's: sends, blocking
	srcCtx   context.Context // sources: also ends on StopSources
	turn     *turn           // under Config.CPU: the instance's turn
	opctx    Context
	opened   bool
	finished bool
	closed   bool
	scratch  []Message
	changes  []progress.Change
	stats    counters
	// ingest is the ingest time of the batch OnBatch is handling (0
	// outside it); maxIngest the latest the instance has received.
	ingest, maxIngest int64
	// acct is the instance's share of Config.Memory (Context.Memory),
	// made on first use and given back when it closes.
	acct *Account
	// alloc is Context.Allocator's, made on first use.
	alloc memory.Allocator
}

// inEdge maps one incoming edge's senders onto tracker slots.
type inEdge struct {
	port int
	slot []int    // by sender instance; -1 if not a sender to us
	seq  []uint64 // next expected Seq by sender instance
}

// outEdge routes one outgoing edge's batches to its receiver channels.
type outEdge struct {
	edge  *Edge
	chans []*outChan // by position in receivers
	parts []uint32
	bal   *balancer
}

type outChan struct {
	id     ChannelID
	s      Sender
	local  *queue // set when the receiver runs on this worker
	seq    uint64
	closed bool
	// carry: s is a FrontierCarrier; held is the latest batch emitted in
	// this step, sent (with the step's frontier advance) when it settles.
	carry   bool
	held    Message
	holding bool
}

func (in *instance) name() string {
	return fmt.Sprintf("%s[%d]", in.info.Operator, in.info.Index)
}

// NewWorker builds the part of g that runs on worker id: it constructs the
// worker's operator instances, listens on the transport for channels coming
// from other workers and dials those going to them. Build every worker of a
// dataflow before running any.
func NewWorker(g *Graph, id int, cfg Config) (*Worker, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	w := &Worker{id: id, g: g, cfg: cfg, epoch: time.Now()}
	w.epochNs = w.epoch.UnixNano()
	order := g.topoOrder()
	local := make(map[[2]int]*instance) // (op, instance index) -> instance
	for _, op := range order {
		spec := &g.Operators[op]
		for k := 0; k < spec.Parallelism(); k++ {
			if spec.WorkerOf(k) != id {
				continue
			}
			info := Instance{Query: g.Query, Operator: spec.Name, OperatorID: op, Index: k, Parallelism: spec.Parallelism(), Worker: id}
			logic, err := newInstance(spec, info)
			if err != nil {
				w.shutdown()
				return nil, fmt.Errorf("%w: building %s[%d]: %w", ErrOperator, spec.Name, k, BoundError(err))
			}
			if logic == nil {
				w.shutdown()
				return nil, fmt.Errorf("%w: %s[%d]: constructor returned nil", ErrInvalidGraph, spec.Name, k)
			}
			in := &instance{w: w, info: info, op: logic, q: newQueue(cfg.QueueLen, &w.res), owned: make(map[*Capability]struct{}), ctx: context.Background(), srcCtx: context.Background()}
			in.opctx.in = in
			if s, ok := logic.(Source); ok && spec.Inputs == 0 {
				in.src = s
			}
			in.obs, _ = logic.(FrontierObserver)
			in.waker, _ = logic.(Waker)
			local[[2]int{op, k}] = in
			w.insts = append(w.insts, in)
		}
	}
	var opens []func() error
	for _, in := range w.insts {
		if err := w.wire(in, local, &opens); err != nil {
			w.shutdown()
			return nil, err
		}
	}
	if err := openLinks(opens); err != nil {
		w.shutdown()
		return nil, err
	}
	return w, nil
}

// maxLinkOpens bounds the links a worker opens at once.
const maxLinkOpens = 16

// openLinks opens a worker's remote channels (its transport's Listens and
// Dials) together, up to maxLinkOpens at a time, and returns the first
// one's error in wiring order. Opening a link waits until the transport's
// server has registered it (over NATS, a flush: one round trip), so that
// the peer's first frame cannot be missed: one after the other, a part with
// n remote channels waited n round trips as it was built, each a wake-up
// behind whatever else held the processor (#25: most of a small query's
// part build beside an abusive query, traced). Opened together their
// round trips overlap (the client's pings go out in one write and the
// server answers them in order). Every Transport's Listen and Dial may be
// called concurrently.
func openLinks(opens []func() error) error {
	if len(opens) == 1 {
		return opens[0]()
	}
	errs := make([]error, len(opens))
	slots := make(chan struct{}, maxLinkOpens)
	var wg sync.WaitGroup
	for i, open := range opens {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			errs[i] = open()
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// newInstance calls an operator's constructor; a panic there (it may open
// files, decode a model) is its error.
func newInstance(spec *OperatorSpec, info Instance) (op Operator, err error) {
	defer func() {
		if p := recover(); p != nil {
			op, err = nil, Recovered(fmt.Sprintf("%s[%d] new", info.Operator, info.Index), p)
		}
	}()
	return spec.New(info)
}

// wire sets up in's tracker, inputs and outputs; the remote channels' opens
// are added to opens (openLinks runs them).
func (w *Worker) wire(in *instance, local map[[2]int]*instance, opens *[]func() error) error {
	g := w.g
	op, k := in.info.OperatorID, in.info.Index
	spec := &g.Operators[op]
	senders := make([]int, spec.Inputs)
	in.inputs = make([]*inEdge, len(g.Edges))
	for ei := range g.Edges {
		e := &g.Edges[ei]
		if e.To.Op != op {
			continue
		}
		ie := &inEdge{port: e.To.Port, slot: make([]int, g.Operators[e.From.Op].Parallelism()), seq: make([]uint64, g.Operators[e.From.Op].Parallelism())}
		for i := range ie.slot {
			ie.slot[i] = -1
		}
		for _, s := range g.sendersTo(e, k) {
			ie.slot[s] = senders[e.To.Port]
			senders[e.To.Port]++
			if g.Operators[e.From.Op].WorkerOf(s) != w.id {
				if w.cfg.Transport == nil {
					return fmt.Errorf("%w: %s needs a transport to receive edge %d from worker %d", ErrInvalidGraph, in.name(), ei, g.Operators[e.From.Op].WorkerOf(s))
				}
				ch := ChannelID{Query: g.Query, Edge: ei, Sender: s, Receiver: k}
				*opens = append(*opens, func() error {
					if err := w.cfg.Transport.Listen(ch, in.q); err != nil {
						return fmt.Errorf("listen %v: %w", ch, err)
					}
					return nil
				})
			}
		}
		in.inputs[ei] = ie
	}
	tr, err := progress.NewTracker(senders, spec.Outputs, spec.Connectivity)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalidGraph, in.name(), err)
	}
	in.tr = tr
	in.outs = make([][]*outEdge, spec.Outputs)
	for ei := range g.Edges {
		e := &g.Edges[ei]
		if e.From.Op != op {
			continue
		}
		oe := &outEdge{edge: e}
		recv := g.receiversOf(e, k)
		for _, r := range recv {
			ch := ChannelID{Query: g.Query, Edge: ei, Sender: k, Receiver: r}
			oc := &outChan{id: ch}
			if g.Operators[e.To.Op].WorkerOf(r) == w.id {
				oc.local = local[[2]int{e.To.Op, r}].q
				oc.s = directSender{in: oc.local}
			} else {
				if w.cfg.Transport == nil {
					return fmt.Errorf("%w: %s needs a transport to send edge %d to worker %d", ErrInvalidGraph, in.name(), ei, g.Operators[e.To.Op].WorkerOf(r))
				}
				*opens = append(*opens, func() error {
					s, err := w.cfg.Transport.Dial(ch)
					if err != nil {
						return fmt.Errorf("dial %v: %w", ch, err)
					}
					oc.s = s
					if fc, ok := s.(FrontierCarrier); ok && fc.CarriesFrontier() {
						oc.carry = true
					}
					return nil
				})
			}
			oe.chans = append(oe.chans, oc)
		}
		if e.Kind == Balance {
			oe.bal = newBalancer(e.Shares, len(recv))
		}
		in.outs[e.From.Port] = append(in.outs[e.From.Port], oe)
	}
	return nil
}

// topoOrder lists operator indices so that every edge goes forward.
func (g *Graph) topoOrder() []int {
	indeg := make([]int, len(g.Operators))
	for _, e := range g.Edges {
		indeg[e.To.Op]++
	}
	var order, ready []int
	for i, d := range indeg {
		if d == 0 {
			ready = append(ready, i)
		}
	}
	for len(ready) > 0 {
		n := ready[0]
		ready = ready[1:]
		order = append(order, n)
		for _, e := range g.Edges {
			if e.From.Op == n {
				indeg[e.To.Op]--
				if indeg[e.To.Op] == 0 {
					ready = append(ready, e.To.Op)
				}
			}
		}
	}
	return order
}

// ID is the worker's index in the graph's placement.
func (w *Worker) ID() int { return w.id }

// NextWake is the earliest wake-up an unfinished local instance asked for.
func (w *Worker) NextWake() (time.Time, bool) {
	var at time.Time
	for _, in := range w.insts {
		if !in.finished && !in.wakeAt.IsZero() && (at.IsZero() || in.wakeAt.Before(at)) {
			at = in.wakeAt
		}
	}
	return at, !at.IsZero()
}

// Done reports whether every local instance has finished.
func (w *Worker) Done() bool {
	for _, in := range w.insts {
		if !in.finished {
			return false
		}
	}
	return true
}

// Step runs every unfinished local instance once, in topological order: it
// opens instances on their first step, handles everything queued, delivers
// due notifications, polls sources whose receivers have room, and announces
// frontier changes. It reports whether anything happened; a dataflow of
// stepped workers is finished when all are Done, and stuck when a round of
// Steps over all of them does nothing. The first error is sticky.
func (w *Worker) Step() (bool, error) {
	if w.err != nil {
		return false, w.err
	}
	if w.closed {
		return false, fmt.Errorf("%w: worker %d", ErrClosed, w.id)
	}
	busy := false
	for _, in := range w.insts {
		did, err := in.step(true)
		busy = busy || did
		if err != nil {
			w.err = err
			w.shutdown()
			return busy, err
		}
	}
	return busy, nil
}

// step does one round of work for the instance without waiting for input.
// With checkRoom a source is only polled when its local receivers have room
// (stepping); without, its Emit blocks instead (concurrent mode). Every
// operator callback runs under it (and close), so this is where a panic in
// one becomes the query's error (ErrPanic) instead of the process's end.
func (in *instance) step(checkRoom bool) (busy bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			busy, err = true, Recovered(in.name(), p)
		}
	}()
	return in.stepOnce(checkRoom)
}

func (in *instance) stepOnce(checkRoom bool) (bool, error) {
	if in.finished {
		return false, nil
	}
	busy := false
	if !in.opened {
		in.opened = true
		busy = true
		cap, err := in.borrow(0)
		if err != nil {
			return busy, err
		}
		err = in.op.Open(&in.opctx, cap)
		in.unborrow(cap)
		if err != nil {
			return busy, in.fail("open", err)
		}
	}
	if err := in.q.failure(); err != nil {
		return busy, fmt.Errorf("%s: %w", in.name(), err)
	}
	msgs := in.q.take(in.scratch)
	for i := range msgs {
		busy = true
		// A cancelled run (an aborted query) stops at the next message, not
		// after the inbox drains: up to QueueLen batches, each maybe a model
		// run of a second, would run on for nothing.
		err := in.ctx.Err()
		if err == nil {
			err = in.flushHeld()
		}
		if err == nil {
			err = in.handle(&msgs[i])
		} else {
			msgs[i].release()
		}
		if err != nil {
			for j := i + 1; j < len(msgs); j++ {
				msgs[j].release()
			}
			clear(msgs)
			in.scratch = msgs[:0]
			return busy, err
		}
	}
	clear(msgs)
	in.scratch = msgs[:0]
	if !in.wakeAt.IsZero() && !in.w.cfg.Now().Before(in.wakeAt) {
		busy = true
		in.wakeAt = time.Time{}
		if err := in.flushHeld(); err != nil {
			return busy, err
		}
		if in.waker != nil {
			start, out := in.begin()
			err := in.waker.OnWake(&in.opctx)
			in.timed(start, out)
			if err != nil {
				return busy, in.fail("wake", err)
			}
		}
	}
	if in.src != nil && !in.srcDone && in.w.stopRequested() {
		busy = true
		in.finishSource()
	}
	if in.src != nil && !in.srcDone && in.wakeAt.IsZero() && (!checkRoom || in.room()) {
		busy = true
		if err := in.flushHeld(); err != nil {
			return busy, err
		}
		done, err := in.src.Produce(&in.opctx)
		if err != nil && in.ctx.Err() == nil && in.w.stopRequested() && errors.Is(err, context.Canceled) {
			// A Produce waiting on its Context() was interrupted by a
			// graceful stop: that is the end of the source, not a failure.
			err, done = nil, true
		}
		if err != nil {
			return busy, in.fail("produce", err)
		}
		if done {
			in.finishSource()
		}
	}
	if err := in.settle(); err != nil {
		return busy, err
	}
	return busy, nil
}

// finishSource marks a source done and drops its capabilities, so its
// output closes.
func (in *instance) finishSource() {
	in.srcDone = true
	for c := range in.owned {
		c.Drop()
	}
}

// StopSources asks every local source to stop: each counts as finished at
// its next poll (a Produce blocked on ctx.Context() is cancelled), its
// capabilities are dropped, and the rest of the dataflow drains normally:
// frontiers close, windows and joins flush what they hold, sinks get it all,
// and Run returns nil. It is the graceful counterpart of cancelling Run's
// context. Safe to call from any goroutine, before or during Run or between
// Steps.
func (w *Worker) StopSources() {
	w.stopMu.Lock()
	defer w.stopMu.Unlock()
	w.stopped = true
	for _, cancel := range w.stopping {
		cancel()
	}
}

func (w *Worker) stopRequested() bool {
	if w.cfg.Stop != nil {
		select {
		case <-w.cfg.Stop:
			return true
		default:
		}
	}
	w.stopMu.Lock()
	defer w.stopMu.Unlock()
	return w.stopped
}

// fail wraps an operator's error, unless the run was cancelled, in which
// case the cancellation is the cause.
func (in *instance) fail(what string, err error) error {
	if cerr := in.ctx.Err(); cerr != nil {
		// Whatever failed during a cancellation (a send into a worker that
		// already stopped) is its consequence, not a cause.
		return cerr
	}
	return fmt.Errorf("%w: %s %s: %w", ErrOperator, in.name(), what, BoundError(err))
}

// room reports whether every local receiver queue of every output has room,
// so that stepping a source cannot grow queues without bound.
func (in *instance) room() bool {
	for _, oes := range in.outs {
		for _, oe := range oes {
			for _, oc := range oe.chans {
				if oc.local != nil && !oc.local.room() {
					return false
				}
			}
		}
	}
	return true
}

func (in *instance) borrow(e Epoch) (*Capability, error) {
	if err := in.tr.Acquire(e); err != nil {
		return nil, fmt.Errorf("%s: %w", in.name(), err)
	}
	return &Capability{in: in, epoch: e, valid: true}, nil
}

func (in *instance) unborrow(c *Capability) {
	c.valid = false
	_ = in.tr.Release(c.epoch)
}

// handle processes one message from the inbox.
func (in *instance) handle(m *Message) error {
	ch := m.Channel
	var ie *inEdge
	if ch.Edge >= 0 && ch.Edge < len(in.inputs) {
		ie = in.inputs[ch.Edge]
	}
	if ie == nil || ch.Sender < 0 || ch.Sender >= len(ie.slot) || ie.slot[ch.Sender] < 0 || ch.Receiver != in.info.Index {
		m.release()
		return fmt.Errorf("%w: %s got a message for channel %v it does not receive", ErrProtocol, in.name(), ch)
	}
	if m.Seq != ie.seq[ch.Sender] {
		m.release()
		return fmt.Errorf("%w: %s: channel %v: sequence %d, expected %d", ErrProtocol, in.name(), ch, m.Seq, ie.seq[ch.Sender])
	}
	ie.seq[ch.Sender]++
	slot := ie.slot[ch.Sender]
	switch m.Kind {
	case Data:
		if f := in.tr.SenderFrontier(ie.port, slot); m.Epoch < f || m.Record == nil {
			m.release()
			return fmt.Errorf("%w: %s: channel %v: data at %v behind announced frontier %v (or without a record)", ErrProtocol, in.name(), ch, m.Epoch, f)
		}
		cap, err := in.borrow(m.Epoch)
		if err != nil {
			m.release()
			return err
		}
		rec := m.Record
		m.Record = nil
		in.stats.batchesIn.Add(1)
		in.stats.rowsIn.Add(rec.NumRows())
		rows := rec.NumRows()
		in.ingest = m.Ingest
		in.maxIngest = max(in.maxIngest, m.Ingest)
		var written arrow.Record // the sink's batch, for OnResult
		if len(in.outs) == 0 && m.Ingest != 0 && in.w.cfg.OnResult != nil {
			rec.Retain()
			written = rec
		}
		start, out := in.begin()
		if in.w.cfg.Timing {
			in.stats.touch(in.w.epochNs + int64(start))
		}
		err = in.op.OnBatch(&in.opctx, ie.port, Batch{Epoch: m.Epoch, Record: rec, Ingest: m.Ingest}, cap)
		in.timed(start, out)
		in.ingest = 0
		if len(in.outs) == 0 && m.Ingest != 0 && err == nil {
			in.endToEnd(m.Ingest, rows, written)
		}
		if written != nil {
			written.Release()
		}
		in.unborrow(cap)
		if err != nil {
			return in.fail("batch", err)
		}
		if m.Frontier != 0 {
			return in.advance(ie, slot, ch, m.Frontier)
		}
	case Progress:
		m.release()
		return in.advance(ie, slot, ch, m.Epoch)
	default:
		m.release()
		return fmt.Errorf("%w: %s: channel %v: unknown message kind %v", ErrProtocol, in.name(), ch, m.Kind)
	}
	return nil
}

// advance takes a sender's new frontier on an input: a Progress message,
// or one carried on a batch (Header.Frontier).
func (in *instance) advance(ie *inEdge, slot int, ch ChannelID, frontier Epoch) error {
	adv, err := in.tr.UpdateInput(ie.port, slot, frontier)
	if err != nil {
		return fmt.Errorf("%w: %s: channel %v: %w", ErrProtocol, in.name(), ch, err)
	}
	if adv && in.obs != nil {
		start, out := in.begin()
		err := in.obs.OnFrontier(&in.opctx, ie.port, in.tr.InputFrontier(ie.port))
		in.timed(start, out)
		if err != nil {
			return in.fail("frontier", err)
		}
	}
	return nil
}

// begin notes, when timing, the start of a callback and the batches emitted
// so far.
func (in *instance) begin() (time.Duration, int64) {
	if !in.w.cfg.Timing {
		return 0, 0
	}
	return in.w.mono(), in.stats.batchesOut.Load()
}

// timed accounts a callback that began at start, when the instance had
// emitted out batches: its time is busy time, and, when it emitted (or the
// instance has no outputs: a sink), a sample of the batch latency. Timing
// only the callbacks that produce is what makes the percentiles mean "time
// to make an output batch": a model call that queues rows costs nothing
// until the call that runs them, an aggregate's flush is the latency.
func (in *instance) timed(start time.Duration, out int64) {
	if !in.w.cfg.Timing {
		return
	}
	d := in.w.mono() - start
	in.stats.busyNs.Add(int64(d))
	if in.stats.batchesOut.Load() != out || len(in.outs) == 0 {
		in.stats.batch.observe(d)
	}
}

// endToEnd accounts rows a sink has just written that entered the query at
// ingest: their end-to-end latency, from the wall clock because ingest was
// stamped on another worker, maybe in another process.
func (in *instance) endToEnd(ingest int64, rows int64, rec arrow.Record) {
	now := time.Now().UnixNano()
	in.w.res.finish(ingest, now)
	d := time.Duration(now - ingest)
	in.stats.e2e.observeN(d, uint64(rows))
	if slo := in.w.cfg.LatencySLO; slo > 0 && d > slo {
		in.stats.sloMiss.Add(rows)
	}
	if f := in.w.cfg.OnLatency; f != nil {
		f(d, rows)
	}
	if f := in.w.cfg.OnResult; f != nil && rec != nil {
		f(d, rec)
	}
}

// settle delivers due notifications, announces output frontier advances
// downstream, and finishes the instance once it is done.
func (in *instance) settle() error {
	for {
		e, ok := in.tr.NextNotification()
		if !ok {
			break
		}
		// The tracker kept the notification's capability: lend it out.
		cap := &Capability{in: in, epoch: e, valid: true}
		in.stats.notified.Add(1)
		start, out := in.begin()
		err := in.op.OnNotify(&in.opctx, cap)
		in.timed(start, out)
		in.unborrow(cap)
		if err != nil {
			return in.fail("notify", err)
		}
	}
	in.changes = in.tr.Changes(in.changes[:0])
	for _, c := range in.changes {
		for _, oe := range in.outs[c.Output] {
			for _, oc := range oe.chans {
				if err := oc.progress(in.ctx, c.Frontier); err != nil {
					return in.fail("progress", err)
				}
				if c.Frontier == Closed {
					oc.closed = true
					if err := oc.s.Close(); err != nil {
						return in.fail("close channel", err)
					}
				}
			}
		}
	}
	// Batches held for a frontier that did not move this step go alone.
	if err := in.flushHeld(); err != nil {
		return err
	}
	if in.tr.Done() && (in.src == nil || in.srcDone) {
		in.finished = true
		in.stats.finished.Store(true)
		return in.close()
	}
	return nil
}

// flushHeld sends the batches held for a frontier advance. A batch is
// held only from the callback that emitted it to the step's settle: the
// next callback of the same step (another input message, a wake-up, a
// source's next read, which may take long) finds it sent.
func (in *instance) flushHeld() error {
	for _, oes := range in.outs {
		for _, oe := range oes {
			for _, oc := range oe.chans {
				if err := oc.flush(in.ctx); err != nil {
					return in.fail("send", err)
				}
			}
		}
	}
	return nil
}

// close ends the instance: the operator releases its state, channels close,
// the inbox releases whatever is still queued and refuses more.
func (in *instance) close() error {
	if in.closed {
		return nil
	}
	in.closed = true
	for c := range in.owned {
		c.Drop()
	}
	var err error
	// Also when never opened: the constructor may already hold resources
	// (files, records handed to a source).
	if cerr := in.closeOp(); cerr != nil {
		err = fmt.Errorf("%w: %s close: %w", ErrOperator, in.name(), BoundError(cerr))
	}
	for _, oes := range in.outs {
		for _, oe := range oes {
			for _, oc := range oe.chans {
				if oc.holding {
					oc.holding = false
					oc.held.release()
				}
				if !oc.closed {
					oc.closed = true
					_ = oc.s.Close()
				}
			}
		}
	}
	in.q.close()
	return err
}

// closeOp calls the operator's Close; a panic there is its error, so the
// rest of the worker still closes.
func (in *instance) closeOp() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = Recovered(in.name()+" close", p)
		}
	}()
	defer in.acct.Close()
	return in.op.Close(&in.opctx)
}

// send sends m, or, on a channel that carries frontiers, holds a batch
// until the step settles (sending the one it held before).
func (oc *outChan) send(ctx context.Context, m Message) error {
	if !oc.carry || m.Kind != Data || oc.closed {
		return oc.put(ctx, m)
	}
	if err := oc.flush(ctx); err != nil {
		m.release()
		return err
	}
	oc.held, oc.holding = m, true
	return nil
}

// progress announces frontier: on the batch held, if there is one (and
// the channel stays open), else as a message of its own.
func (oc *outChan) progress(ctx context.Context, frontier Epoch) error {
	if oc.holding && frontier != Closed {
		m := oc.held
		oc.held, oc.holding = Message{}, false
		m.Frontier = frontier
		return oc.put(ctx, m)
	}
	if err := oc.flush(ctx); err != nil {
		return err
	}
	return oc.put(ctx, Message{Header: Header{Kind: Progress, Epoch: frontier}})
}

// flush sends the batch held, if any.
func (oc *outChan) flush(ctx context.Context) error {
	if !oc.holding {
		return nil
	}
	m := oc.held
	oc.held, oc.holding = Message{}, false
	return oc.put(ctx, m)
}

// put stamps m with the channel's identity and next sequence number and
// sends it.
func (oc *outChan) put(ctx context.Context, m Message) error {
	if oc.closed {
		m.release()
		return fmt.Errorf("%w: channel %v", ErrClosed, oc.id)
	}
	m.Channel = oc.id
	m.Seq = oc.seq
	oc.seq++
	return oc.s.Send(ctx, m)
}

// send routes one record (owned) along the edge.
func (oe *outEdge) send(in *instance, e Epoch, ingest int64, rec arrow.Record) error {
	data := func(oc *outChan, r arrow.Record) error {
		return oc.send(in.ctx, Message{Header: Header{Kind: Data, Epoch: e, Ingest: ingest}, Record: r})
	}
	switch {
	case len(oe.chans) == 1:
		return data(oe.chans[0], rec)
	case oe.edge.Kind == Broadcast:
		for i, oc := range oe.chans {
			if i < len(oe.chans)-1 {
				rec.Retain()
			}
			if err := data(oc, rec); err != nil {
				for j := i + 1; j < len(oe.chans); j++ {
					rec.Release()
				}
				return err
			}
		}
		return nil
	case oe.edge.Kind == Balance:
		return data(oe.chans[oe.bal.pick(rec.NumRows())], rec)
	case oe.edge.Kind == Exchange:
		n := int(rec.NumRows())
		if cap(oe.parts) < n {
			oe.parts = make([]uint32, n)
		}
		parts := oe.parts[:n]
		if err := oe.edge.Partition(rec, len(oe.chans), parts); err != nil {
			rec.Release()
			return fmt.Errorf("%w: %s: %w", ErrOperator, in.name(), BoundError(err))
		}
		split, err := Split(in.w.cfg.Allocator, rec, parts, len(oe.chans))
		rec.Release()
		if err != nil {
			return fmt.Errorf("%s: %w", in.name(), err)
		}
		for p, r := range split {
			if r == nil {
				continue
			}
			if err := data(oe.chans[p], r); err != nil {
				for _, rest := range split[p+1:] {
					if rest != nil {
						rest.Release()
					}
				}
				return err
			}
		}
		return nil
	}
	rec.Release()
	return fmt.Errorf("%w: %s: edge kind %v", ErrInvalidGraph, in.name(), oe.edge.Kind)
}

// Run runs the worker's instances concurrently, one goroutine each, until
// all are done, one fails, or ctx ends. On return every goroutine has
// exited, every operator has been closed and every queued record released.
// It returns nil when all instances finished, the first failure otherwise
// (ctx's error on cancellation).
func (w *Worker) Run(ctx context.Context) error {
	if w.closed || w.running {
		return fmt.Errorf("%w: worker %d already ran", ErrClosed, w.id)
	}
	w.running = true
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	w.makeBlocking()
	for _, in := range w.insts {
		in.ctx = ctx
		if w.cfg.CPU != nil {
			// What the instance's step waits on outside the worker
			// (Waiting) finds its turn in the context it is given.
			in.turn = &turn{share: w.cfg.CPU}
			in.ctx = context.WithValue(ctx, turnKey{}, in.turn)
		}
		if in.src != nil {
			// A source's Context() also ends on a graceful stop, so a
			// Produce blocked waiting for input returns. Its sends keep the
			// run's context: what it emits before stopping is delivered.
			sctx, scancel := context.WithCancel(in.ctx)
			defer scancel()
			in.srcCtx = sctx
			w.stopMu.Lock()
			w.stopping = append(w.stopping, scancel)
			stopped := w.stopped
			w.stopMu.Unlock()
			if stopped {
				scancel()
			}
		}
	}
	if w.cfg.Stop != nil {
		go func() {
			select {
			case <-w.cfg.Stop:
				w.StopSources()
			case <-ctx.Done():
			}
		}()
	}
	for _, in := range w.insts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A trace (go tool trace) shows each instance's goroutine as
			// a region named for its query: whose goroutines waited.
			defer trace.StartRegion(ctx, "tierflow instance").End()
			trace.Log(ctx, "query", w.g.Query)
			if err := in.run(ctx); err != nil {
				mu.Lock()
				if firstErr == nil || (isConsequence(firstErr) && !isConsequence(err)) {
					firstErr = err
				}
				mu.Unlock()
				cancel()
			}
		}()
	}
	wg.Wait()
	w.shutdown()
	if firstErr != nil {
		w.err = firstErr
		return firstErr
	}
	if !w.Done() {
		w.err = ctx.Err()
		return w.err
	}
	return nil
}

// makeBlocking bounds the worker's queues for concurrent running. Until
// then they are unbounded so that stepping never blocks a Deliver.
func (w *Worker) makeBlocking() {
	for _, in := range w.insts {
		in.q.setBlocking(true)
	}
}

// isConsequence tells errors caused by another failure or a cancellation
// apart from root causes.
func isConsequence(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrClosed)
}

// run is the loop of one instance's goroutine.
func (in *instance) run(ctx context.Context) error {
	for !in.finished {
		if err := ctx.Err(); err != nil {
			return err
		}
		if in.opened && (in.src == nil || in.srcDone || !in.wakeAt.IsZero()) {
			var timer *time.Timer
			var timeout <-chan time.Time
			if !in.wakeAt.IsZero() {
				timer = time.NewTimer(in.wakeAt.Sub(in.w.cfg.Now()))
				timeout = timer.C
			}
			err := in.q.wait(ctx, timeout)
			if timer != nil {
				timer.Stop()
			}
			if err != nil {
				return err
			}
		}
		if err := in.stepTurn(ctx); err != nil {
			return err
		}
	}
	return nil
}

// stepTurn steps the instance, in its query's turn when it shares the
// worker's CPU (Config.CPU).
func (in *instance) stepTurn(ctx context.Context) error {
	t := in.turn
	if t == nil {
		_, err := in.step(false)
		return err
	}
	start, err := t.share.enter(ctx)
	if err != nil {
		return err
	}
	t.in, t.start = true, start
	_, err = in.step(false)
	if t.in {
		t.in = false
		t.share.exit(t.start)
	}
	return err
}

// shutdown closes every instance (operators release state, queues release
// records). Safe to call more than once.
func (w *Worker) shutdown() {
	w.closed = true
	for _, in := range w.insts {
		_ = in.close()
	}
}

// Close abandons a worker that is not running (e.g. a stepped test that
// stops early): every operator is closed and every queued record released.
func (w *Worker) Close() {
	w.shutdown()
}
