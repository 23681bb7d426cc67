package connectors

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/sources"
)

// Stats count what a connector saw; safe for concurrent use, shareable by
// several instances.
type Stats struct {
	Messages atomic.Int64 // messages received or published
	Bytes    atomic.Int64 // their payload bytes
	Bad      atomic.Int64 // messages (or rows of them) that did not decode
	Dropped  atomic.Int64 // core NATS messages dropped by a full subscription
}

// DefaultSourceMaxDelay is how long a message source waits, after a batch's
// first message, for more to fill it. A stream engine's user expects a quiet
// stream's rows within milliseconds: the wait is latency every row of a
// partial batch pays (it was 100 ms, which alone set the median), while a
// busy stream fills its batches long before it (at 10,000 messages/s, 5 ms
// is still 50 rows a batch).
const DefaultSourceMaxDelay = 5 * time.Millisecond

// defaultPendingBytes is SourceConfig.PendingBytes without a query budget:
// nats.go's own default.
const defaultPendingBytes = 64 << 20

// message is one received message and how to settle it.
type message struct {
	data   []byte
	header nats.Header
	// js is the JetStream message to acknowledge (nil: core NATS, nothing
	// to settle). It is kept whole, not as method values, so that a
	// message costs no allocation beyond nats.go's own.
	js jetstream.Msg
	// cumulative: acknowledging js acknowledges every earlier message of
	// its consumer too (AckAll), so of a batch only the last one is
	// acknowledged.
	cumulative bool
}

// seq is the message's stream sequence (0: core NATS). It is parsed from
// the reply subject only when asked: the reader needs it for a batch's
// first message alone.
func (m message) seq() uint64 {
	if m.js == nil {
		return 0
	}
	md, err := m.js.Metadata()
	if err != nil {
		return 0
	}
	return md.Sequence.Stream
}

// term marks a message that will never decode: it is not redelivered.
func (m message) term() {
	if m.js != nil {
		_ = m.js.Term()
	}
}

// input is a transport's receiving end.
type input interface {
	// next waits for a message until ctx ends (then it returns ctx's error).
	next(ctx context.Context) (message, error)
	close() error
}

type inputFactory func(ctx context.Context, c SourceConfig) (input, error)

func (c *SourceConfig) defaults() error {
	if c.Conn == nil {
		return fmt.Errorf("%w: no NATS connection", ErrConfig)
	}
	if c.Subject == "" {
		return fmt.Errorf("%w: no subject", ErrConfig)
	}
	if c.Schema == nil || c.Schema.NumFields() == 0 {
		return fmt.Errorf("%w: subject %q: no columns declared", ErrConfig, c.Subject)
	}
	if c.Columns != nil {
		if len(c.Columns) != c.Schema.NumFields() {
			return fmt.Errorf("%w: subject %q: %d column positions for %d columns", ErrConfig, c.Subject, len(c.Columns), c.Schema.NumFields())
		}
		for _, p := range c.Columns {
			if p < 0 || p >= c.Declared {
				return fmt.Errorf("%w: subject %q: column position %d of %d declared", ErrConfig, c.Subject, p, c.Declared)
			}
		}
	}
	if c.MaxRows <= 0 {
		c.MaxRows = 4096
	}
	if c.MaxDelay <= 0 {
		c.MaxDelay = DefaultSourceMaxDelay
	}
	if c.PendingBytes <= 0 {
		c.PendingBytes = defaultPendingBytes
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = c.PendingBytes
	}
	if c.MaxAckPending <= 0 {
		c.MaxAckPending = 4 * c.MaxRows
	}
	if c.Stats == nil {
		c.Stats = &Stats{}
	}
	return nil
}

// newSource checks c and returns a factory of source instances; each
// instance subscribes when it opens and unsubscribes when it closes.
func newSource(c SourceConfig, f format, in inputFactory) (func() (dataflow.Operator, error), error) {
	if err := c.defaults(); err != nil {
		return nil, err
	}
	return func() (dataflow.Operator, error) {
		r := &reader{c: c, f: f, newInput: in}
		op := &sourceOp{Source: sources.NewSource(r, c.EventTime, c.Report), r: r}
		if c.Name != "" && c.Report != nil {
			op.TrackPositions(func(p sources.Position) { c.Report.Position(c.Name, p) })
		}
		return op, nil
	}, nil
}

// ResumeAt has the source start at p, a Position it recorded in an earlier
// generation of its query: its consumer starts at p.Seq and its watermark
// where it stood there.
func (s *sourceOp) ResumeAt(p sources.Position) {
	s.r.c.StartSeq, s.r.c.DeliverNew = p.Seq, false
	s.ResumeAfter(p.MaxTS)
}

// sourceOp is operators/sources' event-time source over a message reader; it
// subscribes in Open, where the instance's context is known.
type sourceOp struct {
	*sources.Source
	r *reader
	// ahead is the subscription's part of its query's read-ahead.
	ahead *dataflow.ReadAheadGate
}

func (s *sourceOp) Open(ctx *dataflow.Context, cap *dataflow.Capability) error {
	s.r.ctx = ctx.Context()
	// What the client buffers for the subscription (core NATS pending, a
	// JetStream pull's bytes) is the query's too, held ahead of its reader,
	// but no allocator of the query's makes it: under a budget it is bounded
	// by its share of the query's read-ahead (dataflow.ReadAheadGate: a
	// quarter of the budget, shared with the query's other readers, files
	// and subscriptions alike), as a file's read-ahead is. The default 64
	// MiB per subscription let a query limited to 64 MiB hold as much
	// again, unseen by its limit; the read-ahead whole per subscription
	// let a query of many flooded subjects hold it once per subject. The
	// share is the one when it subscribes (a subscription's limit is set
	// then): n subscriptions of a query hold at most the read-ahead times
	// 1 + 1/2 + ... + 1/n. Half of it is the payloads' and half the
	// client's bytes a message beside them (a core subscription's message
	// limit, SourceConfig.PendingLimits), so the two together stay within
	// the share.
	if s.ahead = dataflow.NewReadAheadGate(ctx.Allocator()); s.ahead != nil {
		s.r.c.PendingBytes = int(min(int64(s.r.c.PendingBytes), max(s.ahead.Share()/2, 1)))
	}
	in, err := s.r.newInput(s.r.ctx, s.r.c)
	if err != nil {
		return fmt.Errorf("%s %q: %w", s.r.f.name, s.r.c.Subject, err)
	}
	s.r.in = in
	return s.Source.Open(ctx, cap)
}

// Close unsubscribes and gives the subscription's share of the query's
// read-ahead back to its other readers.
func (s *sourceOp) Close(ctx *dataflow.Context) error {
	err := s.Source.Close(ctx)
	s.ahead.Close()
	return err
}

// reader batches decoded messages into records for sources.Source: Next
// blocks for the first message of a batch, then takes messages until the
// batch is full or MaxDelay has passed. It ends (nil record) when the
// context ends or an EndHeader message arrives.
type reader struct {
	c        SourceConfig
	f        format
	newInput inputFactory
	ctx      context.Context
	in       input
	rb       *sources.RowBuilder
	asm      Assembler // chunked messages in progress
	ready    []arrow.Record
	// readyAt is when the first message of each ready record's batch
	// arrived (Unix ns); last is that of the record Next returned.
	readyAt []int64
	last    int64
	// readySeq is the stream sequence of each ready record's batch's first
	// message; lastSeq that of the record Next returned.
	readySeq []uint64
	lastSeq  uint64
	// chunkSeq is the sequence of the first chunk of the message being put
	// together (0: none).
	chunkSeq uint64
	unacked  []message
	received int64
	ended    bool
}

func (r *reader) Schema() *arrow.Schema { return r.c.Schema }

func (r *reader) Next(mem memory.Allocator) (arrow.Record, error) {
	// Next is called again only after the previous record was emitted: now
	// its messages may be acknowledged.
	if err := r.settle(); err != nil {
		return nil, err
	}
	// A batch of only bad messages is no batch: wait for the next one
	// (a nil record would end the source).
	for len(r.ready) == 0 && !r.ended {
		if err := r.fill(mem); err != nil {
			return nil, err
		}
	}
	if len(r.ready) == 0 {
		// The end: acknowledge the end marker too.
		return nil, r.settle()
	}
	rec := r.ready[0]
	r.ready = r.ready[1:]
	r.last, r.readyAt = r.readyAt[0], r.readyAt[1:]
	r.lastSeq, r.readySeq = r.readySeq[0], r.readySeq[1:]
	return rec, nil
}

// LastPosition implements sources.PositionReader.
func (r *reader) LastPosition() uint64 { return r.lastSeq }

// LastIngest implements sources.IngestReader: a batch's rows entered the
// query when its first message arrived, so its MaxDelay wait is latency.
func (r *reader) LastIngest() int64 { return r.last }

// settle acknowledges the messages taken since the last call. Of the
// messages of a cumulative (AckAll) consumer only the last is acknowledged:
// that settles the ones before it, and a batch costs the server one ack
// instead of one per message (acks were half of what reading a stream
// cost it: BenchmarkJetStreamAcks).
func (r *reader) settle() error {
	last := -1
	for i, m := range r.unacked {
		if m.cumulative {
			last = i
		}
	}
	for i, m := range r.unacked {
		if m.js == nil || m.cumulative && i != last {
			continue
		}
		if err := m.js.Ack(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			return fmt.Errorf("ack on %q: %w", r.c.Subject, err)
		}
	}
	clear(r.unacked) // let the messages' buffers go
	r.unacked = r.unacked[:0]
	return nil
}

func (r *reader) rows() int {
	n := r.rb.Len()
	for _, x := range r.ready {
		n += int(x.NumRows())
	}
	return n
}

func (r *reader) fill(mem memory.Allocator) error {
	if r.rb == nil {
		r.rb = sources.NewRowBuilder(mem, r.c.Schema)
		if r.c.Columns != nil {
			r.rb.AtPositions(r.c.Columns, r.c.Declared)
		}
	}
	ctx := r.ctx
	var batch delay
	defer batch.stop()
	started := false
	var first int64
	var firstSeq uint64
	// The counts are added once a batch, not per message: two atomic adds
	// a message were a tenth of what the reader adds to decoding.
	var received, size int64
	defer func() {
		r.c.Stats.Messages.Add(received)
		r.c.Stats.Bytes.Add(size)
		for len(r.readyAt) < len(r.ready) {
			r.readyAt = append(r.readyAt, first)
		}
		for len(r.readySeq) < len(r.ready) {
			r.readySeq = append(r.readySeq, firstSeq)
		}
	}()
	for r.rows() < r.c.MaxRows {
		m, err := r.in.next(ctx)
		if err != nil {
			if r.ctx.Err() != nil {
				r.ended = true // stopped: what was received still goes out
				break
			}
			if started && ctx.Err() != nil {
				break // MaxDelay passed
			}
			return fmt.Errorf("%q: %w", r.c.Subject, err)
		}
		if firstSeq == 0 {
			// The first message taken, or the first chunk of a message
			// still being put together.
			firstSeq = m.seq()
			if r.chunkSeq != 0 {
				firstSeq = r.chunkSeq
			}
		}
		if reason := m.header.Get(FailedHeader); reason != "" {
			r.unacked = append(r.unacked, m)
			return fmt.Errorf("%w: subject %q: %s", ErrUpstream, r.c.Subject, reason)
		}
		if m.header.Get(EndHeader) != "" {
			r.unacked = append(r.unacked, m)
			r.ended = true
			break
		}
		if m.header.Get(ChunkHeader) != "" {
			r.asm.Limit = r.c.MaxMessageBytes
			if r.asm.Charger == nil {
				r.asm.Charger, _ = mem.(dataflow.Charger)
			}
			data, done, err := r.asm.Add(m.header, m.data)
			if err != nil {
				if err := r.dropChunked(m, err); err != nil {
					return err
				}
				continue
			}
			r.unacked = append(r.unacked, m)
			if !done {
				if r.chunkSeq == 0 {
					r.chunkSeq = m.seq()
				}
				continue
			}
			r.chunkSeq = 0
			m = message{data: data, header: m.header}
		}
		if !started {
			started = true
			first = time.Now().UnixNano()
			ctx = batch.start(r.ctx, r.c.MaxDelay)
		}
		r.received++
		received++
		size += int64(len(m.data))
		recs, bad := r.f.decode(mem, r.c.Schema, m.data, r.rb)
		r.ready = append(r.ready, recs...)
		if len(bad) > 0 {
			if err := r.bad(m, bad); err != nil {
				return err
			}
			continue
		}
		if m.js != nil {
			// A core message has nothing to settle.
			r.unacked = append(r.unacked, m)
		}
	}
	if rec := r.rb.Finish(); rec != nil {
		r.ready = append(r.ready, rec)
	}
	return nil
}

// dropChunked handles a chunked message that cannot be put back together:
// over the size limit it is an oversized drop, else a malformed message;
// either fails the query under sources.Fail.
func (r *reader) dropChunked(m message, err error) error {
	if errors.Is(err, dataflow.ErrMemory) {
		// Past the query's memory: the query fails, naming its holder.
		return fmt.Errorf("%s subject %q: %w", r.f.name, r.c.Subject, err)
	}
	if !errors.Is(err, errOversized) {
		return r.bad(m, []error{err})
	}
	err = fmt.Errorf("%s subject %q: %w", r.f.name, r.c.Subject, err)
	if r.c.OnError == sources.Fail {
		return err
	}
	if r.c.Report != nil {
		r.c.Report.Drops.Add(dataflow.DropOversized, 1)
	}
	m.term()
	return nil
}

// bad marks a message that did not (wholly) decode: counted and reported and
// never redelivered, or the end of the query under sources.Fail.
func (r *reader) bad(m message, errs []error) error {
	r.c.Stats.Bad.Add(int64(len(errs)))
	for _, e := range errs {
		err := fmt.Errorf("%s subject %q message %d: %w", r.f.name, r.c.Subject, r.received, e)
		if r.c.OnError == sources.Fail {
			return err
		}
		if r.c.Report != nil {
			r.c.Report.Bad(err)
		}
	}
	m.term()
	return nil
}

func (r *reader) Close() error {
	for _, x := range r.ready {
		x.Release()
	}
	r.ready, r.readyAt, r.readySeq = nil, nil, nil
	r.asm.Release()
	if r.rb != nil {
		r.rb.Release()
	}
	if r.in == nil {
		return nil
	}
	err := r.in.close()
	r.in = nil
	return err
}

// delay is a batch's MaxDelay deadline, started by its first message.
type delay struct{ cancel context.CancelFunc }

func (d *delay) start(parent context.Context, after time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(parent, after)
	d.cancel = cancel
	return ctx
}

func (d *delay) stop() {
	if d.cancel != nil {
		d.cancel()
	}
}
