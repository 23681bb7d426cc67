// Package natsrelay is the NATS relay backend: each link is a pair of core
// NATS subjects, <prefix>.<query>.<edge>.<sender>.<receiver>.d carrying data,
// progress and end frames sender -> receiver, and the same with .c carrying
// credit and close frames back. One subject per link keeps a link's frames in
// publish order (NATS orders messages per publisher and subject), which is
// what keeps a frontier behind its batches.
//
// Messages larger than the server's max payload are cut into chunks, each with
// the full frame header, and reassembled by the receiver straight into the
// buffer the decoded record will live in. Credit is counted in messages: a
// receiver grants Config.Window at open and tops the grant up as its consumer
// takes messages, so a slow consumer stalls its sender and a receiver never
// buffers more than Window messages. Grants are cumulative, so a lost or
// repeated grant is repaired by the next one; a sender that waits too long
// asks again with a hello frame.
//
// It must not import runtime or cmd; the NATS connection is the caller's.
package natsrelay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/relay/frame"
)

// Options configure a transport.
type Options struct {
	relay.Config
	// Prefix starts every relay subject. Default "tierflow.relay".
	Prefix string
	// MaxChunk caps a wire message below the server's max payload (tests use
	// it to force chunking); 0 means the server's max payload.
	MaxChunk int
	// Retry is how long a sender waits for credit before asking again with a
	// hello frame (default 200ms). It only matters when a grant was lost.
	Retry time.Duration
	// Shape, when set, caps the bytes per second a sender puts on a link
	// (0: no cap), as a token bucket that delays sends: failure drills
	// and tests slow one link down this way. The wait counts as a stall.
	Shape func(link relay.LinkID) float64
	// Shaper, when set and not nil for a link, shapes it to a bandwidth
	// that changes over time (a trace, `--link-trace`). Unlike Shape, a
	// message waits until its own bytes have crossed the shaped link, not
	// only the ones before it: a latency measured across the link then
	// includes its transfer time, as on a real slow link.
	Shaper func(link relay.LinkID) relay.Shaper
}

// Transport is the NATS backend of relay.Transport.
type Transport struct {
	nc     *nats.Conn
	cfg    relay.Config
	prefix string
	chunk  int
	retry  time.Duration
	ends   relay.Ends
	shape  func(link relay.LinkID) float64
	shaper func(link relay.LinkID) relay.Shaper
}

var _ relay.Transport = (*Transport)(nil)

// New makes a transport over nc. Closing the transport leaves nc open.
func New(nc *nats.Conn, o Options) *Transport {
	t := &Transport{nc: nc, cfg: o.Config.WithDefaults(), prefix: o.Prefix, chunk: o.MaxChunk, retry: o.Retry, shape: o.Shape, shaper: o.Shaper}
	if t.prefix == "" {
		t.prefix = "tierflow.relay"
	}
	if t.retry <= 0 {
		t.retry = 200 * time.Millisecond
	}
	return t
}

// Subjects returns the data and credit subjects of link.
func (t *Transport) Subjects(link relay.LinkID) (data, credit string) {
	base := t.prefix + "." + link.Query + "." + strconv.FormatUint(uint64(link.Edge), 10) + "." +
		strconv.FormatUint(uint64(link.Sender), 10) + "." + strconv.FormatUint(uint64(link.Receiver), 10)
	return base + ".d", base + ".c"
}

// Stats implements relay.Transport.
func (t *Transport) Stats() []relay.LinkStats { return t.ends.Stats() }

// Close implements relay.Transport.
func (t *Transport) Close() error { return t.ends.CloseAll() }

// flush waits until the server has processed everything sent so far (a new
// subscription included). nats.go insists on a deadline.
func (t *Transport) flush(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	return t.nc.FlushWithContext(ctx)
}

func header(link relay.LinkID, kind frame.Kind) frame.Header {
	return frame.Header{Kind: kind, Query: link.Query, Edge: link.Edge, Sender: link.Sender, Receiver: link.Receiver, Chunks: 1}
}

func sameLink(h *frame.Header, link relay.LinkID) bool {
	return h.Query == link.Query && h.Edge == link.Edge && h.Sender == link.Sender && h.Receiver == link.Receiver
}

func protocolError(link relay.LinkID, format string, args ...any) error {
	return fmt.Errorf("%w on %s: %s", relay.ErrProtocol, link, fmt.Sprintf(format, args...))
}

// end is what a sender and a receiver share: the link, its two subjects,
// its meter and the one subscription it listens on.
type end struct {
	t          *Transport
	link       relay.LinkID
	m          *relay.Meter
	dataSubj   string
	creditSubj string
	sub        *nats.Subscription
}

func (e *end) Link() relay.LinkID     { return e.link }
func (e *end) Stats() relay.LinkStats { return e.m.Snapshot() }

// endpoint is a sender or a receiver as open sees it.
type endpoint interface {
	Close() error
	teardown()
}

// open registers self on the transport and subscribes cb to subj; setup,
// if not nil, adjusts the subscription. When it returns nil the
// subscription is known to the server, so the peer's first frame cannot be
// missed. A failure after registering tears self down again.
func (e *end) open(ctx context.Context, dir relay.Direction, self endpoint, subj string, cb nats.MsgHandler, setup func(*nats.Subscription) error) error {
	m, err := e.t.ends.Add(e.link, dir, self)
	if err != nil {
		return err
	}
	e.m = m
	e.sub, err = e.t.nc.Subscribe(subj, cb)
	if err == nil && setup != nil {
		err = setup(e.sub)
	}
	if err == nil {
		err = e.t.flush(ctx)
	}
	if err != nil {
		self.teardown()
		what := "sender"
		if dir == relay.Recv {
			what = "receiver"
		}
		return fmt.Errorf("relay: open %s of %s: %w", what, e.link, err)
	}
	return nil
}

// control publishes a control frame on subj and meters it if it went out.
func (e *end) control(subj string, b []byte) error {
	err := e.t.nc.Publish(subj, b)
	if err == nil {
		e.m.ControlBytes(len(b))
	}
	return err
}

// ---- sender ----

type sender struct {
	end
	maxChunk int

	sendMu sync.Mutex // orders messages; guards seq, buf, enc, broken
	seq    uint64
	buf    bytes.Buffer
	enc    *frame.Encoder
	hspace []byte // zeros the size of this link's header
	broken error

	mu         sync.Mutex // guards the credit state below
	sent       uint64
	granted    uint64
	peerClosed bool
	closed     bool
	notify     chan struct{} // closed and replaced on every change

	// rate caps the link's bytes per second (Options.Shape; 0: none);
	// nextSend is when the bucket lets the next message go.
	rate     float64
	nextSend time.Time
	// shaper shapes the link to a trace (Options.Shaper; nil: none).
	shaper relay.Shaper
	// unacked are the data messages sent whose acks have not come back,
	// oldest first (guarded by mu): an ack makes one bandwidth sample.
	unacked []sentMsg

	closeOnce sync.Once
}

// sentMsg is a data message waiting for its ack: when it got the link
// (after the messages before it had crossed a shaped link) and its bytes.
type sentMsg struct {
	seq   uint64
	start time.Time
	bytes int
}

// OpenSender implements relay.Transport. It returns once the credit
// subscription is live; the first send waits for the receiver's first grant.
func (t *Transport) OpenSender(ctx context.Context, link relay.LinkID) (relay.Sender, error) {
	if err := link.Validate(); err != nil {
		return nil, err
	}
	s := &sender{end: end{t: t, link: link}, notify: make(chan struct{}), enc: frame.NewEncoder(t.cfg.Allocator)}
	s.dataSubj, s.creditSubj = t.Subjects(link)
	if t.shape != nil {
		s.rate = t.shape(link)
	}
	if t.shaper != nil {
		s.shaper = t.shaper(link)
	}
	s.maxChunk = int(t.nc.MaxPayload())
	if t.chunk > 0 && t.chunk < s.maxChunk {
		s.maxChunk = t.chunk
	}
	hl := header(link, frame.KindData)
	s.hspace = make([]byte, hl.Len())
	if s.maxChunk < hl.Len()+64 {
		return nil, fmt.Errorf("relay: max payload %d leaves no room for data on %s", s.maxChunk, link)
	}
	if err := s.open(ctx, relay.Send, s, s.creditSubj, s.onCredit, nil); err != nil {
		return nil, err
	}
	s.hello()
	return s, nil
}

// hello asks the receiver for its current grant.
func (s *sender) hello() {
	_ = s.control(s.dataSubj, frame.Append(nil, header(s.link, frame.KindHello), nil))
}

func (s *sender) onCredit(msg *nats.Msg) {
	h, body, err := frame.DecodeQuery(msg.Data, s.link.Query)
	if err != nil || !sameLink(&h, s.link) {
		return // not ours to act on; a receiver never sends garbage
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch h.Kind {
	case frame.KindCredit:
		g, err := frame.DecodeCredit(body)
		if err != nil || g <= s.granted {
			return
		}
		s.granted = g
	case frame.KindClose:
		s.peerClosed = true
	case frame.KindAck:
		s.acked(h.Seq)
		return
	default:
		return
	}
	close(s.notify)
	s.notify = make(chan struct{})
}

// acked takes the receiver's ack of message seq; s.mu is held. Acks come
// in order, so older messages still waiting lost theirs.
func (s *sender) acked(seq uint64) {
	now := time.Now()
	for len(s.unacked) > 0 && s.unacked[0].seq <= seq {
		m := s.unacked[0]
		s.unacked = s.unacked[1:]
		if m.seq == seq {
			s.m.Ack(m.bytes, m.start, now)
		}
	}
}

// acquire takes one credit, waiting for a grant if there is none.
func (s *sender) acquire(ctx context.Context) error {
	var start time.Time
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
			s.m.Stall(time.Since(start))
		}
	}()
	for {
		s.mu.Lock()
		switch {
		case s.closed:
			s.mu.Unlock()
			return fmt.Errorf("send on %s: %w", s.link, relay.ErrClosed)
		case s.peerClosed:
			s.mu.Unlock()
			return fmt.Errorf("send on %s: %w", s.link, relay.ErrPeerClosed)
		case s.sent < s.granted:
			s.sent++
			s.mu.Unlock()
			return nil
		}
		ch := s.notify
		s.mu.Unlock()
		if start.IsZero() {
			start = time.Now()
			timer = time.NewTimer(s.t.retry)
		}
		select {
		case <-ch:
		case <-timer.C:
			s.hello()
			timer.Reset(s.t.retry)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// release gives back a credit taken for a message that was not sent.
func (s *sender) release() {
	s.mu.Lock()
	s.sent--
	s.mu.Unlock()
}

func (s *sender) SendData(ctx context.Context, epoch uint64, rec arrow.Record) error {
	return s.SendDataAt(ctx, epoch, 0, rec)
}

func (s *sender) SendDataAt(ctx context.Context, epoch uint64, ingest int64, rec arrow.Record) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.broken != nil {
		return s.broken
	}
	if err := s.acquire(ctx); err != nil {
		return err
	}
	h := header(s.link, frame.KindData)
	h.Epoch, h.Seq, h.Ingest = epoch, s.seq+1, ingest
	hl := h.Len()
	// Encode behind room for the first header, so the first chunk needs no
	// copy; later chunks write their header over the tail of the chunk before,
	// which NATS has already copied out.
	s.buf.Reset()
	s.buf.Write(s.hspace)
	withSchema, err := s.enc.Encode(&s.buf, rec)
	if err != nil {
		s.release()
		return err
	}
	if withSchema {
		h.Flags = frame.FlagSchema
	}
	payload := s.buf.Bytes()
	start, err := s.shaped(ctx, len(payload))
	if err != nil {
		s.release()
		return err
	}
	total := len(payload) - hl
	per := s.maxChunk - hl
	chunks := max(1, (total+per-1)/per)
	h.Total, h.Chunks = uint64(total), uint32(chunks)
	for i := 0; i < chunks; i++ {
		start := hl + i*per
		end := min(start+per, len(payload))
		h.Chunk = uint32(i)
		h.Put(payload[start-hl : start])
		if err := s.t.nc.Publish(s.dataSubj, payload[start-hl:end]); err != nil {
			// A message cut short cannot be taken back: the link is broken.
			s.broken = fmt.Errorf("send on %s: %w", s.link, err)
			return s.broken
		}
		s.m.Wire(end - start + hl)
	}
	s.seq++
	s.mu.Lock()
	// A receiver that never acks (an older one) must not grow this
	// without bound: the window caps what can be unacknowledged anyway.
	if len(s.unacked) >= 4*s.t.cfg.Window {
		s.unacked = s.unacked[1:]
	}
	s.unacked = append(s.unacked, sentMsg{seq: s.seq, start: start, bytes: len(payload)})
	s.mu.Unlock()
	s.m.Batch(rec.NumRows())
	if s.buf.Cap() > 4*s.maxChunk && total < s.buf.Cap()/4 {
		s.buf = bytes.Buffer{} // don't pin a huge buffer after one huge batch
	}
	return nil
}

// shaped waits until a shaped link has carried n more bytes and returns
// when they got the link (now, on a link that is not shaped).
func (s *sender) shaped(ctx context.Context, n int) (time.Time, error) {
	now := time.Now()
	if s.rate <= 0 && s.shaper == nil {
		return now, nil
	}
	if s.nextSend.Before(now) {
		s.nextSend = now
	}
	start := s.nextSend
	var wait time.Duration
	if s.shaper != nil {
		s.m.Shaped(s.shaper.BytesPerSecond(now))
		s.nextSend = relay.TransferEnd(s.shaper, s.nextSend, n)
		wait = s.nextSend.Sub(now)
	} else {
		wait = s.nextSend.Sub(now)
		s.nextSend = s.nextSend.Add(time.Duration(float64(n) / s.rate * float64(time.Second)))
	}
	if wait <= 0 {
		return start, nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		s.m.Stall(wait)
		return start, nil
	case <-ctx.Done():
		return start, ctx.Err()
	}
}

func (s *sender) SendProgress(ctx context.Context, frontier uint64) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.broken != nil {
		return s.broken
	}
	if err := s.acquire(ctx); err != nil {
		return err
	}
	h := header(s.link, frame.KindProgress)
	h.Epoch, h.Seq = frontier, s.seq+1
	b := frame.Append(nil, h, nil)
	if err := s.t.nc.Publish(s.dataSubj, b); err != nil {
		s.release()
		return fmt.Errorf("send on %s: %w", s.link, err)
	}
	s.seq++
	s.m.ProgressMsg()
	s.m.Wire(len(b))
	return nil
}

// Close sends the end frame behind everything sent and flushes it out.
func (s *sender) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.notify)
		s.notify = make(chan struct{})
		s.mu.Unlock()
		s.sendMu.Lock() // a blocked send has bailed out; a running one finishes
		if s.broken == nil {
			h := header(s.link, frame.KindEnd)
			h.Seq = s.seq + 1
			if err = s.control(s.dataSubj, frame.Append(nil, h, nil)); err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err = s.t.nc.FlushWithContext(ctx)
				cancel()
			}
			if err != nil {
				err = fmt.Errorf("close %s: %w", s.link, err)
			}
		}
		s.sendMu.Unlock()
		s.teardown()
	})
	return err
}

func (s *sender) teardown() {
	if s.sub != nil {
		_ = s.sub.Unsubscribe()
	}
	s.sendMu.Lock()
	s.enc.Reset()
	s.sendMu.Unlock()
	s.m.MarkClosed()
	s.t.ends.Remove(s.link, relay.Send)
}

// ---- receiver ----

// item is a complete message waiting for Recv: data is already decoded, on
// the subscription's goroutine, so decoding overlaps with the consumer.
type item struct {
	h    frame.Header
	rec  arrow.Record
	size int64 // wire bytes, for the buffered-bytes gauge
}

// counted says whether it uses credit and so counts as buffered: the end
// frame rides outside the window.
func (it *item) counted() bool { return it.h.Kind != frame.KindEnd }

type receiver struct {
	end
	q       chan item
	window  uint64
	granted atomic.Uint64

	mu     sync.Mutex // serialises the callback with Close; guards below
	expect uint64
	dec    *frame.Decoder
	asm    []byte // chunks of the message being reassembled
	asmH   frame.Header
	asmOn  bool
	asmN   uint32 // chunks so far
	asmSz  int64
	err    error
	errCh  chan struct{}
	closed bool

	consumed uint64 // Recv's goroutine only
	eof      bool

	closeCh   chan struct{}
	closeOnce sync.Once
}

// OpenReceiver implements relay.Transport. The data subscription is live
// before the first grant goes out, so nothing the sender sends can be missed.
func (t *Transport) OpenReceiver(ctx context.Context, link relay.LinkID) (relay.Receiver, error) {
	if err := link.Validate(); err != nil {
		return nil, err
	}
	w := t.cfg.Window
	r := &receiver{
		end:     end{t: t, link: link},
		q:       make(chan item, w+1), // the window plus the end frame
		window:  uint64(w),
		expect:  1,
		dec:     frame.NewDecoder(t.cfg.Allocator),
		errCh:   make(chan struct{}),
		closeCh: make(chan struct{}),
	}
	r.granted.Store(uint64(w))
	r.dataSubj, r.creditSubj = t.Subjects(link)
	// Credit bounds what can be pending; the client's own limits would only
	// drop messages of a large window of large batches.
	unlimited := func(sub *nats.Subscription) error { return sub.SetPendingLimits(-1, -1) }
	if err := r.open(ctx, relay.Recv, r, r.dataSubj, r.onDataSafe, unlimited); err != nil {
		return nil, err
	}
	r.publishGrant()
	return r, nil
}

// publishGrant sends the cumulative grant. Two goroutines may race to send
// grants; the sender keeps the larger, so order does not matter.
func (r *receiver) publishGrant() {
	h := header(r.link, frame.KindCredit)
	h.Total = 8
	_ = r.control(r.creditSubj, frame.Append(nil, h, frame.EncodeCredit(nil, r.granted.Load())))
}

// fail records the first protocol error; r.mu is held.
func (r *receiver) fail(err error) {
	if r.err == nil {
		r.err = err
		close(r.errCh)
	}
	r.asmOn = false
	r.dec.Close()
}

// onDataSafe is onData for the client's delivery goroutine: a panic while
// taking a frame apart (a bug, or a frame no check caught) fails this link,
// and with it the query, instead of the whole process.
func (r *receiver) onDataSafe(msg *nats.Msg) {
	defer func() {
		if p := recover(); p != nil {
			err := dataflow.Recovered(fmt.Sprintf("relay receiver of %s", r.link), p)
			r.mu.Lock()
			defer r.mu.Unlock()
			r.fail(fmt.Errorf("%w on %s: %w", relay.ErrProtocol, r.link, err))
		}
	}()
	r.onData(msg)
}

func (r *receiver) onData(msg *nats.Msg) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.err != nil {
		return
	}
	h, body, err := frame.DecodeQuery(msg.Data, r.link.Query)
	if err != nil {
		r.fail(fmt.Errorf("%w on %s: %w", relay.ErrProtocol, r.link, err))
		return
	}
	if !sameLink(&h, r.link) {
		r.fail(protocolError(r.link, "frame for %s/e%d/%d->%d on this link's subject", h.Query, h.Edge, h.Sender, h.Receiver))
		return
	}
	size := int64(len(msg.Data))
	switch h.Kind {
	case frame.KindHello:
		r.m.ControlBytes(len(msg.Data))
		r.publishGrant()
		return
	case frame.KindEnd:
		r.m.ControlBytes(len(msg.Data))
	case frame.KindData, frame.KindProgress:
		r.m.Wire(len(msg.Data))
	default:
		r.fail(protocolError(r.link, "%s frame on the data subject", h.Kind))
		return
	}
	if h.Chunk == 0 && h.Seq != r.expect {
		r.fail(protocolError(r.link, "message %d where %d was due (lost, duplicated or reordered)", h.Seq, r.expect))
		return
	}
	if h.Chunks > 1 {
		if body = r.assemble(h, body, size); body == nil {
			return // more chunks to come, or failed
		}
		h, size = r.asmH, r.asmSz
	}
	r.expect++
	it := item{h: h, size: size}
	if h.Kind == frame.KindData {
		rec, err := r.dec.Decode(body, h.Flags&frame.FlagSchema != 0)
		if err != nil {
			r.fail(fmt.Errorf("%w on %s: message %d: %w", relay.ErrProtocol, r.link, h.Seq, err))
			return
		}
		it.rec = rec
		// The ack is the sender's bandwidth sample (Jellyfish 6): sent as
		// the message is whole here, before it waits for the consumer, so
		// a slow consumer does not read as a slow link.
		ack := header(r.link, frame.KindAck)
		ack.Seq = h.Seq
		_ = r.control(r.creditSubj, frame.Append(nil, ack, nil))
	}
	r.push(it)
}

// assemble adds a chunk to the message being reassembled and returns the
// whole body once the last chunk is in, nil before; r.mu is held.
func (r *receiver) assemble(h frame.Header, body []byte, size int64) []byte {
	if h.Chunk == 0 {
		if h.Total > uint64(r.t.cfg.MaxMessageBytes) {
			r.fail(protocolError(r.link, "message of %d bytes, at most %d", h.Total, r.t.cfg.MaxMessageBytes))
			return nil
		}
		// A fresh buffer per message: the decoded record may keep pointing
		// into it (zero-copy), exactly as a single-chunk record points into
		// its NATS message.
		r.asm, r.asmH, r.asmOn, r.asmN, r.asmSz = make([]byte, 0, h.Total), h, true, 0, 0
	}
	a := &r.asmH
	if !r.asmOn || h.Seq != a.Seq || h.Chunk != r.asmN || h.Chunks != a.Chunks || h.Total != a.Total ||
		h.Kind != a.Kind || h.Flags != a.Flags || h.Epoch != a.Epoch || h.Ingest != a.Ingest {
		r.fail(protocolError(r.link, "chunk %d/%d of message %d out of place", h.Chunk, h.Chunks, h.Seq))
		return nil
	}
	if uint64(len(r.asm)+len(body)) > a.Total || (h.Chunk+1 < h.Chunks && len(body) == 0) {
		r.fail(protocolError(r.link, "chunks of message %d overrun its %d bytes", h.Seq, a.Total))
		return nil
	}
	r.asm = append(r.asm, body...)
	r.asmN++
	r.asmSz += size
	if h.Chunk+1 < h.Chunks {
		return nil
	}
	r.asmOn = false
	if uint64(len(r.asm)) != a.Total {
		r.fail(protocolError(r.link, "message %d has %d of %d bytes", h.Seq, len(r.asm), a.Total))
		return nil
	}
	body, r.asm = r.asm, nil
	return body
}

// push queues a complete message; r.mu is held. The queue holds the window
// plus the end frame, so a full queue is a sender ignoring its credit.
func (r *receiver) push(it item) {
	if it.counted() {
		r.m.Enqueue(it.size)
	}
	select {
	case r.q <- it:
	default:
		if it.counted() {
			r.m.Dequeue(it.size)
		}
		if it.rec != nil {
			it.rec.Release()
		}
		r.fail(protocolError(r.link, "message %d beyond the granted credit", it.h.Seq))
	}
}

func (r *receiver) Recv(ctx context.Context) (relay.Message, error) {
	select {
	case <-r.closeCh:
		return relay.Message{}, fmt.Errorf("receive on %s: %w", r.link, relay.ErrClosed)
	default:
	}
	if r.eof {
		return relay.Message{}, io.EOF
	}
	select {
	case it := <-r.q:
		return r.take(it)
	case <-r.errCh:
		select {
		case it := <-r.q:
			return r.take(it)
		default:
			r.mu.Lock()
			err := r.err
			r.mu.Unlock()
			return relay.Message{}, err
		}
	case <-r.closeCh:
		return relay.Message{}, fmt.Errorf("receive on %s: %w", r.link, relay.ErrClosed)
	case <-ctx.Done():
		return relay.Message{}, ctx.Err()
	}
}

func (r *receiver) take(it item) (relay.Message, error) {
	if it.counted() {
		r.m.Dequeue(it.size)
	}
	msg := relay.Message{Seq: it.h.Seq, Epoch: it.h.Epoch, Ingest: it.h.Ingest}
	switch it.h.Kind {
	case frame.KindEnd:
		r.eof = true
		return relay.Message{}, io.EOF
	case frame.KindProgress:
		msg.Kind = relay.KindProgress
		r.m.ProgressMsg()
	case frame.KindData:
		msg.Kind, msg.Record = relay.KindData, it.rec
		r.m.Batch(it.rec.NumRows())
	}
	// Top the grant up once half the window is used, so a busy link sends a
	// credit frame every window/2 messages, not every message.
	r.consumed++
	if r.granted.Load()-r.consumed <= r.window-max(1, r.window/2) {
		r.granted.Store(r.consumed + r.window)
		r.publishGrant()
	}
	return msg, nil
}

// Close drops buffered messages and tells the sender, so a sender blocked on
// credit fails with ErrPeerClosed instead of waiting forever.
func (r *receiver) Close() error {
	var err error
	r.closeOnce.Do(func() {
		r.mu.Lock()
		r.closed = true
		r.asmOn, r.asm = false, nil
		r.dec.Close()
		if e := r.control(r.creditSubj, frame.Append(nil, header(r.link, frame.KindClose), nil)); e != nil && !errors.Is(e, nats.ErrConnectionClosed) {
			err = fmt.Errorf("close %s: %w", r.link, e)
		}
		r.mu.Unlock()
		close(r.closeCh)
		r.teardown()
		for {
			select {
			case it := <-r.q:
				if it.counted() {
					r.m.Dequeue(it.size)
				}
				if it.rec != nil {
					it.rec.Release()
				}
				continue
			default:
			}
			break
		}
	})
	return err
}

func (r *receiver) teardown() {
	if r.sub != nil {
		_ = r.sub.Unsubscribe()
	}
	r.m.MarkClosed()
	r.t.ends.Remove(r.link, relay.Recv)
}
