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
// buffers more than its window. The window is sized by bytes as well: while
// messages are small it grows, up to MaxWindow, to as many as WindowBytes of
// the largest recent one, so a grant (and the sender's wake-up) is paid per
// megabyte rather than per 16 messages. Such a window grants bytes too
// (frame.Credit): a sender that goes on from small messages to large ones
// puts at most WindowBytes of them (or Window of them, if more) in flight,
// not the many messages granted for small ones. Grants are cumulative, so a lost or
// repeated grant is repaired by the next one; a sender that waits too long
// asks again with a hello frame.
//
// Core NATS may lose messages: those in flight at a server when it stops
// never arrive, while the clients reconnect and carry on. A link repairs
// that. The receiver acknowledges every message it has in whole (acks are
// cumulative: an ack of n covers everything up to n, and while data flow
// they ride on the grants, each saying how long it was held), and the sender keeps
// every message until its ack comes back; credit bounds those to the
// window, so memory stays bounded. It sends them all again, oldest first,
// when the receiver reports a gap (a resend frame naming the message it
// lacks, sent instead of failing the link), when its connection has
// reconnected, and when the oldest has waited AckTimeout for its ack. The
// receiver drops (and counts) a message it already has. Only a gap that
// nobody fills within GapTimeout fails the link, with relay.ErrLost: its
// sender is gone. Close waits, up to Linger, for the receiver to
// acknowledge everything, the end frame included.
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
	// Ends, when set, names the two workers of a link: the one that sends
	// its data and the one that receives it. Each of the link's subjects
	// then starts with the name of the worker that publishes on it and
	// then the one that reads it (data <prefix>.<sender>.<receiver>...d,
	// credit <prefix>.<receiver>.<sender>...c), so a server can let a
	// worker publish only as itself and read only what is sent to it
	// (runtime/security's worker permissions). A link whose ends it cannot
	// name ("") keeps the unnamed subjects, which such a server refuses.
	Ends func(link relay.LinkID) (sender, receiver string)
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
	// AckTimeout is how long a sender waits for the ack of its oldest
	// unacknowledged message before sending everything unacknowledged
	// again (default 1s; it doubles while nothing comes back, to 8 times).
	AckTimeout time.Duration
	// GapTimeout is how long a receiver asks for a missing message before
	// it fails the link with relay.ErrLost (default 10s).
	GapTimeout time.Duration
	// Linger bounds how long Close waits for the receiver to acknowledge
	// what was sent (default 30s, a server outage's length).
	Linger time.Duration
	// AckDelay is how long a receiver that has caught up may hold its ack
	// when it acknowledged less than that ago, so that a stream of small
	// messages costs an ack per grant, not one per pause (QUIC's
	// max_ack_delay, TCP's delayed ack). A message that comes alone is
	// still acknowledged at once, and every ack says how long it was held,
	// which the sender takes out of its samples. Default 1ms; negative:
	// ack as soon as the receiver has caught up.
	AckDelay time.Duration
	// ProbeEvery is how often a progress update that could ride on a
	// batch (relay.FrontierSender) goes as a message of its own instead,
	// for the bandwidth estimate's round trip without payload (default
	// relay.BandwidthWindow / 10; negative: never, as tests that count
	// messages want).
	ProbeEvery time.Duration
}

// Transport is the NATS backend of relay.Transport.
type Transport struct {
	nc     *nats.Conn
	cfg    relay.Config
	prefix string
	named  func(link relay.LinkID) (sender, receiver string) // Options.Ends
	chunk  int
	retry  time.Duration
	ends   relay.Ends
	shape  func(link relay.LinkID) float64
	shaper func(link relay.LinkID) relay.Shaper
	ackTO  time.Duration
	gapTO  time.Duration
	linger time.Duration
	probe  time.Duration // Options.ProbeEvery
	ackDly time.Duration // Options.AckDelay (<= 0: none)
	// done is closed by Close: a sender waiting for acks stops waiting.
	done      chan struct{}
	closeOnce sync.Once
	// drop, set by tests, makes a publish it returns true for vanish as
	// if the server had lost it.
	drop func(b []byte) bool
	// spare are buffers closed links' senders no longer need, for the next
	// links of this transport (a query's links come and go together).
	spareMu    sync.Mutex
	spare      [][]byte
	spareBytes int
}

// maxSpareBytes bounds the buffers a transport keeps for its next links.
const maxSpareBytes = 64 << 20

// putSpare keeps b for another link, within maxSpareBytes.
func (t *Transport) putSpare(b []byte) {
	t.spareMu.Lock()
	defer t.spareMu.Unlock()
	if t.spareBytes+cap(b) <= maxSpareBytes {
		t.spare = append(t.spare, b[:0])
		t.spareBytes += cap(b)
	}
}

// getSpare returns a kept buffer, or nil.
func (t *Transport) getSpare() []byte {
	t.spareMu.Lock()
	defer t.spareMu.Unlock()
	n := len(t.spare)
	if n == 0 {
		return nil
	}
	b := t.spare[n-1]
	t.spare[n-1] = nil
	t.spare = t.spare[:n-1]
	t.spareBytes -= cap(b)
	return b
}

var _ relay.Transport = (*Transport)(nil)

// New makes a transport over nc. Closing the transport leaves nc open.
func New(nc *nats.Conn, o Options) *Transport {
	t := &Transport{nc: nc, cfg: o.Config.WithDefaults(), prefix: o.Prefix, named: o.Ends, chunk: o.MaxChunk, retry: o.Retry, shape: o.Shape, shaper: o.Shaper,
		ackTO: o.AckTimeout, gapTO: o.GapTimeout, linger: o.Linger, probe: o.ProbeEvery, ackDly: o.AckDelay, done: make(chan struct{})}
	if t.ackDly == 0 {
		t.ackDly = time.Millisecond
	}
	if t.probe == 0 {
		t.probe = relay.BandwidthWindow / 10
	}
	if t.prefix == "" {
		t.prefix = "tierflow.relay"
	}
	if t.retry <= 0 {
		t.retry = 200 * time.Millisecond
	}
	if t.ackTO <= 0 {
		t.ackTO = time.Second
	}
	if t.gapTO <= 0 {
		t.gapTO = 10 * time.Second
	}
	if t.linger <= 0 {
		t.linger = 30 * time.Second
	}
	return t
}

// Subjects returns the data and credit subjects of link.
func (t *Transport) Subjects(link relay.LinkID) (data, credit string) {
	tail := link.Query + "." + strconv.FormatUint(uint64(link.Edge), 10) + "." +
		strconv.FormatUint(uint64(link.Sender), 10) + "." + strconv.FormatUint(uint64(link.Receiver), 10)
	if t.named != nil {
		if from, to := t.named(link); from != "" && to != "" {
			return t.prefix + "." + from + "." + to + "." + tail + ".d", t.prefix + "." + to + "." + from + "." + tail + ".c"
		}
	}
	return t.prefix + "." + tail + ".d", t.prefix + "." + tail + ".c"
}

// Stats implements relay.Transport.
func (t *Transport) Stats() []relay.LinkStats { return t.ends.Stats() }

// Close implements relay.Transport. Senders stop waiting for acks: closing
// the transport is giving up on the links.
func (t *Transport) Close() error {
	t.closeOnce.Do(func() { close(t.done) })
	return t.ends.CloseAll()
}

// publish puts b on subj, unless a test's drop hook loses it.
func (t *Transport) publish(subj string, b []byte) error {
	if t.drop != nil && t.drop(b) {
		return nil
	}
	return t.nc.Publish(subj, b)
}

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
	err := e.t.publish(subj, b)
	if err == nil {
		e.m.ControlBytes(len(b))
	}
	return err
}

// ---- sender ----

type sender struct {
	end
	maxChunk int

	sendMu sync.Mutex // orders messages; guards seq, enc, broken
	seq    uint64
	enc    *frame.Encoder
	hspace []byte // zeros the size of this link's header
	broken error
	// buf encodes the next data message; lastLen is the last one's
	// length, a new buffer's size.
	buf     bytes.Buffer
	lastLen int
	trailer [frame.FrontierLen]byte // a frontier's bytes on their way into buf
	// lastAlone is when the last progress message went alone
	// (SendDataThen's probe).
	lastAlone time.Time
	// retryTimer asks for credit again while a send waits for it.
	retryTimer *time.Timer

	mu      sync.Mutex // guards the credit state below
	sent    uint64
	granted uint64
	// sentBytes and grantedBytes count data bodies (Header.Total), as
	// frame.Credit.Bytes does; grantedBytes 0: no bound by bytes.
	sentBytes    uint64
	grantedBytes uint64
	peerClosed   bool
	// peerErr is why the receiver cannot be talked to (another frame
	// version).
	peerErr error
	closed  bool
	// notify holds a token after a change: whoever waits for one (a
	// send for credit, Close for acks; one at a time, under sendMu)
	// looks again. A token, not a closed channel, so a grant allocates
	// nothing.
	notify chan struct{}

	// rate caps the link's bytes per second (Options.Shape; 0: none);
	// nextSend is when the bucket lets the next message go.
	rate     float64
	nextSend time.Time
	// shaper shapes the link to a trace (Options.Shaper; nil: none).
	shaper relay.Shaper

	// wireMu guards what went on the wire and is not acknowledged yet, and
	// the publishing itself, so that a message sent again never lands
	// between the chunks of another.
	wireMu  sync.Mutex
	unacked []*outMsg // oldest first
	// unackedB are the data bytes in unacked (the meter's UnackedBytes).
	unackedB int64
	acks     chan struct{} // Close's wait: closed (and dropped) when unacked shrinks
	free     [][]byte      // buffers of acknowledged data messages, for the next
	msgs     []*outMsg     // acknowledged messages, for the next sends
	hsave    []byte        // a chunk's bytes under the next chunk's header
	// evicted is the newest message dropped unacknowledged (a receiver
	// that does not ack): a gap at or below it cannot be filled.
	evicted    uint64
	rto        time.Duration // the ack timeout now (doubles while no ack comes)
	timer      *time.Timer   // checks acks while unacked is not empty
	timerOn    bool
	reconnects uint64 // the connection's reconnects when last checked
	down       bool   // torn down: no more sending again

	closeOnce sync.Once
	closeErr  error
}

// outMsg is a message sent and not yet acknowledged: what it takes to put
// it on the wire again, and what its ack tells the bandwidth estimate.
type outMsg struct {
	h      frame.Header // the first chunk's header (Chunks and Total set)
	b      []byte       // data: header room + body; other kinds: the frame
	start  time.Time    // when it got the link (after the shaper let it go)
	sentAt time.Time    // when it went out last
	resent bool         // its ack is no bandwidth sample (Karn's rule)
}

// OpenSender implements relay.Transport. It returns once the credit
// subscription is live; the first send waits for the receiver's first grant.
func (t *Transport) OpenSender(ctx context.Context, link relay.LinkID) (relay.Sender, error) {
	if err := link.Validate(); err != nil {
		return nil, err
	}
	s := &sender{end: end{t: t, link: link}, notify: make(chan struct{}, 1), enc: frame.NewEncoder(t.cfg.Allocator), rto: t.ackTO}
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
	s.hsave = make([]byte, hl.Len())
	if s.maxChunk < hl.Len()+64 {
		return nil, fmt.Errorf("relay: max payload %d leaves no room for data on %s", s.maxChunk, link)
	}
	s.reconnects = t.nc.Stats().Reconnects
	if err := s.open(ctx, relay.Send, s, s.creditSubj, s.onCredit, nil); err != nil {
		return nil, err
	}
	s.hello()
	return s, nil
}

// hello asks the receiver for its current grant (and how far it got).
func (s *sender) hello() {
	_ = s.control(s.dataSubj, frame.Append(nil, header(s.link, frame.KindHello), nil))
}

func (s *sender) onCredit(msg *nats.Msg) {
	h, body, err := frame.DecodeQuery(msg.Data, s.link.Query)
	if errors.Is(err, frame.ErrVersion) {
		// A receiver of another release: say so, rather than wait for
		// credit it will never send in a form this end reads.
		s.mu.Lock()
		if s.peerErr == nil {
			s.peerErr = fmt.Errorf("%w on %s: the receiver's %w", relay.ErrProtocol, s.link, err)
		}
		s.wake()
		s.mu.Unlock()
		return
	}
	if err != nil || !sameLink(&h, s.link) {
		return // not ours to act on; a receiver never sends garbage
	}
	switch h.Kind {
	case frame.KindAck, frame.KindCredit:
		// A credit frame acknowledges as an ack does (frame version 6):
		// while data flow, acks ride on the grants.
		if h.Ingest > 0 {
			s.m.Residence(time.Duration(h.Ingest))
		}
		if h.Seq > 0 {
			s.wireMu.Lock()
			s.acked(h.Seq, true, time.Duration(h.Epoch))
			s.wireMu.Unlock()
		}
		if h.Kind == frame.KindAck {
			return
		}
	case frame.KindResend:
		s.wireMu.Lock()
		s.acked(h.Seq-1, false, 0)
		if h.Seq > s.evicted {
			s.resend(h.Seq)
		}
		s.wireMu.Unlock()
		return
	}
	switch h.Kind {
	case frame.KindCredit:
		if c, err := frame.DecodeCredit(body); err == nil {
			s.grant(c)
		}
	case frame.KindClose:
		s.mu.Lock()
		s.peerClosed = true
		s.wake()
		s.mu.Unlock()
	}
}

// grant takes the receiver's cumulative grant c; an older one that
// arrives late changes nothing.
func (s *sender) grant(c frame.Credit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Messages > s.granted || c.Bytes > s.grantedBytes {
		s.granted = max(s.granted, c.Messages)
		s.grantedBytes = max(s.grantedBytes, c.Bytes)
		s.wake()
	}
}

// wake tells whoever waits on the credit state that it changed; s.mu is
// held.
func (s *sender) wake() {
	select {
	case s.notify <- struct{}{}:
	default: // a token is there already
	}
}

// acked takes the receiver's word that it has every message up to seq;
// s.wireMu is held. The ack of a data message sent once is a bandwidth
// sample (sample is false when the word came with a resend request).
// delay is how long the receiver held the newest of them before it said
// so (a delayed ack, or one riding on a grant): the samples and the ack
// times take it out, so they read the link, not the receiver's wait.
func (s *sender) acked(seq uint64, sample bool, delay time.Duration) {
	if len(s.unacked) == 0 || s.unacked[0].h.Seq > seq {
		return
	}
	now := time.Now()
	// One ack covers every message up to seq: they leave the front of
	// unacked together, their bytes in one sum. The last data message
	// among them is a bandwidth sample (the receiver acks once it has
	// caught up, so the messages after it, progress behind a batch say,
	// arrived right behind it), the last message a progress one's base
	// round trip.
	k, last := 0, -1
	for ; k < len(s.unacked) && s.unacked[k].h.Seq <= seq; k++ {
		if s.unacked[k].h.Kind == frame.KindData {
			last = k
		}
	}
	// The ack as an undelayed one would have come: never before the
	// newest message it covers went out, whatever the peer says.
	if delay > 0 {
		if now = now.Add(-delay); now.Before(s.unacked[k-1].sentAt) {
			now = s.unacked[k-1].sentAt
		}
	}
	if m := s.unacked[k-1]; sample && m.h.Seq == seq && !m.resent && m.h.Kind == frame.KindProgress {
		s.m.AckEmpty(m.sentAt, now)
	}
	if last >= 0 && sample && !s.unacked[last].resent {
		s.m.Ack(len(s.unacked[last].b), s.unacked[last].start, now)
	}
	freed, data := 0, 0
	for _, m := range s.unacked[:k] {
		if m.h.Kind == frame.KindData {
			freed += len(m.b)
			data++
		}
		s.recycle(m, m.h.Kind == frame.KindData)
	}
	n := copy(s.unacked, s.unacked[k:])
	clear(s.unacked[n:])
	s.unacked = s.unacked[:n]
	if freed > 0 {
		s.unackedBytes(-freed)
		s.m.AckedMessages(data, now)
	}
	s.rto = s.t.ackTO
	if s.acks != nil {
		close(s.acks)
		s.acks = nil
	}
}

// recycle keeps an acknowledged message for the next send, and a data
// message's buffer for the next encoding (as many as the window lets be in
// flight anyway, but not a huge one); s.wireMu is held.
func (s *sender) recycle(m *outMsg, data bool) {
	if data && cap(m.b) <= 4*s.maxChunk {
		if len(s.free) <= s.t.cfg.MaxWindow {
			s.free = append(s.free, m.b[:0])
		} else {
			s.t.putSpare(m.b)
		}
	}
	if len(s.msgs) <= s.t.cfg.MaxWindow {
		*m = outMsg{}
		s.msgs = append(s.msgs, m)
	}
}

// message is an outMsg for the next send: one an acknowledged message
// left, or a new one.
func (s *sender) message() *outMsg {
	s.wireMu.Lock()
	defer s.wireMu.Unlock()
	if n := len(s.msgs); n > 0 {
		m := s.msgs[n-1]
		s.msgs[n-1] = nil
		s.msgs = s.msgs[:n-1]
		return m
	}
	return &outMsg{}
}

// resend puts every unacknowledged message from seq on (0: all) on the
// wire again, oldest first; s.wireMu is held. A failure is left to the
// next try.
func (s *sender) resend(seq uint64) {
	if s.down {
		return
	}
	now := time.Now()
	for _, m := range s.unacked {
		if m.h.Seq < seq {
			continue
		}
		before := s.m.WireBytes() // s.wireMu is held: no other put counts meanwhile
		if err := s.put(m); err != nil {
			return
		}
		m.resent, m.sentAt = true, now
		s.m.Resent(s.m.WireBytes() - before)
	}
}

// tick runs every Retry while messages wait for their acks: after a
// reconnect, or once the oldest has waited the ack timeout, everything
// unacknowledged goes out again.
func (s *sender) tick() {
	s.wireMu.Lock()
	defer s.wireMu.Unlock()
	s.mu.Lock()
	peerClosed := s.peerClosed
	s.mu.Unlock()
	if s.down || len(s.unacked) == 0 || peerClosed {
		s.timerOn = false
		return
	}
	if rc := s.t.nc.Stats().Reconnects; rc != s.reconnects {
		s.reconnects = rc
		s.resend(0)
	} else if time.Since(s.unacked[0].sentAt) >= s.rto {
		s.resend(0)
		s.rto = min(2*s.rto, 8*s.t.ackTO)
	}
	s.timer.Reset(s.t.retry)
}

// put publishes m, chunk by chunk; s.wireMu is held. A chunk's header
// goes over the tail of the chunk before (which NATS has already copied
// out), and those bytes are put back, so m can be sent again.
func (s *sender) put(m *outMsg) error {
	if m.h.Kind != frame.KindData {
		if err := s.t.publish(s.dataSubj, m.b); err != nil {
			return err
		}
		if m.h.Kind == frame.KindEnd {
			s.m.ControlBytes(len(m.b))
		} else {
			s.m.Wire(len(m.b))
		}
		return nil
	}
	h := m.h
	hl := h.Len()
	per := s.maxChunk - hl
	for i := 0; i < int(h.Chunks); i++ {
		start := hl + i*per
		end := min(start+per, len(m.b))
		head := m.b[start-hl : start]
		if i > 0 {
			copy(s.hsave, head)
		}
		h.Chunk = uint32(i)
		h.Put(head)
		err := s.t.publish(s.dataSubj, m.b[start-hl:end])
		if i > 0 {
			copy(head, s.hsave)
		}
		if err != nil {
			return err
		}
		s.m.Wire(end - start + hl)
	}
	return nil
}

// send keeps m until its ack and publishes it. A publish that failed while
// the connection is down (a broken pipe, a full reconnect buffer) is not a
// failure: m goes out again after the reconnect. A closed connection or a
// refused message breaks the link.
func (s *sender) send(m *outMsg) error {
	s.wireMu.Lock()
	defer s.wireMu.Unlock()
	// A receiver that never acks must not grow this without bound; credit
	// keeps an acking one within the window.
	if len(s.unacked) >= 4*s.t.cfg.MaxWindow+1 {
		s.evicted = s.unacked[0].h.Seq
		gone := s.unacked[0]
		s.unacked[0] = nil
		s.unacked = s.unacked[1:]
		if gone.h.Kind == frame.KindData {
			s.unackedBytes(-len(gone.b))
		}
	}
	if m.h.Kind == frame.KindData {
		// A frame kept for its ack is the query's memory until then: a
		// budget that has no room for it fails the link (and the query).
		if ch, ok := s.t.cfg.Allocator.(dataflow.Charger); ok {
			if err := ch.Charge(int64(len(m.b))); err != nil {
				return err
			}
		}
	}
	m.sentAt = time.Now()
	s.unacked = append(s.unacked, m)
	if m.h.Kind == frame.KindData {
		s.unackedBytes(len(m.b))
	}
	if !s.timerOn && !s.down {
		s.timerOn = true
		if s.timer == nil {
			s.timer = time.AfterFunc(s.t.retry, s.tick)
		} else {
			s.timer.Reset(s.t.retry)
		}
	}
	if err := s.put(m); err != nil && s.fatal(err) {
		s.unacked = s.unacked[:len(s.unacked)-1]
		if m.h.Kind == frame.KindData {
			s.unackedBytes(-len(m.b))
		}
		return err
	}
	return nil
}

// unackedBytes adds n to the data bytes awaiting their ack and tells the
// meter; s.wireMu is held.
func (s *sender) unackedBytes(n int) {
	s.unackedB += int64(n)
	s.m.Unacked(s.unackedB)
	// The oldest data message not yet acknowledged: how long it has gone
	// without its ack bounds the link's bandwidth now (relay.LinkStats.OverdueBps).
	var oldest *outMsg
	for _, m := range s.unacked {
		if m.h.Kind == frame.KindData {
			oldest = m
			break
		}
	}
	if oldest == nil || oldest.resent {
		s.m.Oldest(time.Time{}, 0)
	} else {
		s.m.Oldest(oldest.start, len(oldest.b))
	}
	if ch, ok := s.t.cfg.Allocator.(dataflow.Charger); ok && n < 0 {
		ch.Uncharge(int64(-n))
	}
}

// fatal says whether a publish error ends the link, rather than a message
// that will go out again once the connection is back.
func (s *sender) fatal(err error) bool {
	return s.t.nc.IsClosed() || errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrBadSubject) || errors.Is(err, nats.ErrInvalidConnection)
}

// buffer returns an empty buffer for the next data message: one an
// acknowledged message left, or a new one the size of the last message, so
// encoding into it does not grow it step by step.
func (s *sender) buffer() []byte {
	s.wireMu.Lock()
	defer s.wireMu.Unlock()
	if n := len(s.free); n > 0 {
		b := s.free[n-1]
		s.free[n-1] = nil
		s.free = s.free[:n-1]
		return b
	}
	if b := s.t.getSpare(); b != nil {
		return b
	}
	return make([]byte, 0, s.lastLen)
}

// acquire takes one credit, waiting for a grant if there is none; s.sendMu
// is held.
func (s *sender) acquire(ctx context.Context) error {
	ch, err := s.credit()
	if ch == nil {
		return err
	}
	return s.waitCredit(ctx, ch)
}

// credit takes a credit if there is one (nil, nil), fails (nil, err), or
// returns what to wait on for the next grant.
func (s *sender) credit() (chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, fmt.Errorf("send on %s: %w", s.link, relay.ErrClosed)
	case s.peerClosed:
		return nil, fmt.Errorf("send on %s: %w", s.link, relay.ErrPeerClosed)
	case s.peerErr != nil:
		return nil, s.peerErr
	case s.sent < s.granted && (s.grantedBytes == 0 || s.sentBytes < s.grantedBytes):
		// A message starts while the bytes granted are not used up, so
		// one larger than the whole byte grant still goes.
		s.sent++
		return nil, nil
	}
	return s.notify, nil
}

// waitCredit waits for a grant, asking again every Retry; s.sendMu is
// held. Its timer is the sender's, so a stall allocates nothing.
func (s *sender) waitCredit(ctx context.Context, ch chan struct{}) error {
	start := time.Now()
	// Waiting for the receiver's credit is not the sending query's CPU
	// time (dataflow.CPU).
	resume := dataflow.Waiting(ctx)
	if s.retryTimer == nil {
		s.retryTimer = time.NewTimer(s.t.retry)
	} else {
		s.retryTimer.Reset(s.t.retry)
	}
	defer func() {
		s.retryTimer.Stop()
		s.m.Stall(time.Since(start))
		resume()
	}()
	for {
		select {
		case <-ch:
		case <-s.retryTimer.C:
			s.hello()
			s.retryTimer.Reset(s.t.retry)
		case <-ctx.Done():
			return ctx.Err()
		}
		var err error
		if ch, err = s.credit(); ch == nil {
			return err
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
	return s.sendData(ctx, epoch, ingest, rec, 0)
}

// SendDataThen implements relay.FrontierSender: the frontier rides on the
// batch's frame (frame.FlagFrontier), so a batch and the progress behind
// it cost one message, one credit and one ack. Once per ProbeEvery the
// two go apart: the progress message alone is the payload-free round
// trip the bandwidth estimate takes out (LinkStats.BaseRTT), so it stays
// as fresh as when every progress went alone.
func (s *sender) SendDataThen(ctx context.Context, epoch uint64, ingest int64, rec arrow.Record, frontier uint64) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if frontier == 0 || s.t.probe >= 0 && time.Since(s.lastAlone) >= s.t.probe {
		if err := s.sendData(ctx, epoch, ingest, rec, 0); err != nil || frontier == 0 {
			return err
		}
		return s.sendProgress(ctx, frontier)
	}
	if err := s.sendData(ctx, epoch, ingest, rec, frontier); err != nil {
		return err
	}
	s.m.ProgressMsg()
	return nil
}

// sendData sends rec, with frontier on its frame when not 0; s.sendMu is
// held.
func (s *sender) sendData(ctx context.Context, epoch uint64, ingest int64, rec arrow.Record, frontier uint64) error {
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
	// copy. The buffer is the message's until its ack: it may go again.
	s.buf = *bytes.NewBuffer(s.buffer())
	buf := &s.buf
	buf.Write(s.hspace)
	withSchema, err := s.enc.Encode(buf, rec)
	if err != nil {
		s.release()
		return err
	}
	if withSchema {
		h.Flags = frame.FlagSchema
	}
	if frontier != 0 {
		h.Flags |= frame.FlagFrontier
		buf.Write(frame.AppendFrontier(s.trailer[:0], frontier))
	}
	payload := buf.Bytes()
	s.buf = bytes.Buffer{} // the message owns payload now
	s.lastLen = len(payload)
	start, err := s.shaped(ctx, len(payload))
	if err != nil {
		s.release()
		return err
	}
	total := len(payload) - hl
	per := s.maxChunk - hl
	h.Total, h.Chunks = uint64(total), uint32(max(1, (total+per-1)/per))
	m := s.message()
	m.h, m.b, m.start = h, payload, start
	if err := s.send(m); err != nil {
		// A message cut short cannot be taken back: the link is broken.
		s.broken = fmt.Errorf("send on %s: %w", s.link, err)
		return s.broken
	}
	s.seq++
	s.mu.Lock()
	s.sentBytes += h.Total
	s.mu.Unlock()
	s.m.Batch(rec.NumRows())
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
	return s.sendProgress(ctx, frontier)
}

// sendProgress sends a progress message of its own; s.sendMu is held.
func (s *sender) sendProgress(ctx context.Context, frontier uint64) error {
	if s.broken != nil {
		return s.broken
	}
	if err := s.acquire(ctx); err != nil {
		return err
	}
	h := header(s.link, frame.KindProgress)
	h.Epoch, h.Seq = frontier, s.seq+1
	if err := s.send(&outMsg{h: h, b: frame.Append(nil, h, nil), start: time.Now()}); err != nil {
		s.release()
		return fmt.Errorf("send on %s: %w", s.link, err)
	}
	s.seq++
	s.lastAlone = time.Now()
	s.m.ProgressMsg()
	return nil
}

// Close sends the end frame behind everything sent and waits, up to
// Linger, for the receiver to acknowledge it all.
func (s *sender) Close() error { return s.CloseContext(context.Background()) }

// CloseContext implements relay.ContextCloser: it is Close that stops
// waiting for acks when ctx is done.
func (s *sender) CloseContext(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.wake()
		s.mu.Unlock()
		s.sendMu.Lock() // a blocked send has bailed out; a running one finishes
		if s.broken == nil {
			h := header(s.link, frame.KindEnd)
			h.Seq = s.seq + 1
			err := s.send(&outMsg{h: h, b: frame.Append(nil, h, nil), start: time.Now()})
			if err == nil {
				err = s.linger(ctx)
			}
			if err != nil {
				s.closeErr = fmt.Errorf("close %s: %w", s.link, err)
			}
		}
		s.sendMu.Unlock()
		s.teardown()
	})
	return s.closeErr
}

// linger waits until the receiver has acknowledged everything, closed its
// end, or cannot be waited for (ctx, the transport closed, Linger). A
// receiver never heard from may not exist yet: the end frame is only
// flushed to the server, as it always was.
func (s *sender) linger(ctx context.Context) error {
	s.mu.Lock()
	heard := s.granted > 0
	s.mu.Unlock()
	if !heard {
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return s.t.nc.FlushWithContext(fctx)
	}
	deadline := time.NewTimer(s.t.linger)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		peerClosed, notify := s.peerClosed, s.notify
		s.mu.Unlock()
		s.wireMu.Lock()
		if s.acks == nil {
			s.acks = make(chan struct{})
		}
		waiting, acks := len(s.unacked), s.acks
		s.wireMu.Unlock()
		if peerClosed || waiting == 0 {
			return nil
		}
		select {
		case <-notify:
		case <-acks:
		case <-ctx.Done():
			return nil
		case <-s.t.done:
			return nil
		case <-deadline.C:
			s.wireMu.Lock()
			endOnly := len(s.unacked) == 1 && s.unacked[0].h.Kind == frame.KindEnd
			s.wireMu.Unlock()
			if endOnly {
				// The receiver has every message that carries anything; it
				// may have closed its end as the end frame went out, and its
				// close frame got lost.
				return nil
			}
			return fmt.Errorf("%w: %d messages still unacknowledged by the receiver after %v", relay.ErrLost, waiting, s.t.linger)
		}
	}
}

func (s *sender) teardown() {
	if s.sub != nil {
		_ = s.sub.Unsubscribe()
	}
	s.wireMu.Lock()
	s.down = true
	if s.timer != nil {
		s.timer.Stop()
	}
	for _, b := range s.free {
		s.t.putSpare(b)
	}
	s.unacked, s.free = nil, nil
	s.unackedBytes(-int(s.unackedB))
	s.wireMu.Unlock()
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
	h        frame.Header
	rec      arrow.Record
	size     int64  // wire bytes, for the buffered-bytes gauge
	arrived  int64  // when it was whole here (Unix ns)
	frontier uint64 // data: the progress carried on it (0: none)
}

// counted says whether it uses credit and so counts as buffered: the end
// frame rides outside the window.
func (it *item) counted() bool { return it.h.Kind != frame.KindEnd }

type receiver struct {
	end
	q chan item
	// window is the credit now (Recv's goroutine sets it, onData reads
	// it): between Config.Window and MaxWindow, as many messages as
	// WindowBytes of the largest of the last half window (grow).
	window atomic.Uint64
	// largest is the largest data message taken since the last grant
	// (Recv's goroutine only).
	largest int64
	granted atomic.Uint64
	// The window in bytes, where the window grows (else grantedBytes
	// stays 0: no bound by bytes). It bounds what a sender that sent small
	// messages can put in flight when it goes on to large ones: the
	// messages granted for the small ones, but only byteWindow of their
	// bytes (WindowBytes, or Window of the largest message taken, whichever
	// is more). consumedBytes and byteWindow are Recv's goroutine's; both
	// count data bodies (frame.Credit.Bytes).
	grantedBytes  atomic.Uint64
	consumedBytes uint64
	byteWindow    int64
	// grantBuf is the credit frame's buffer (NATS copies it out); Recv
	// and the subscription's goroutine both send grants.
	grantMu  sync.Mutex
	grantBuf []byte

	// whole is the newest message here in whole (in order), wholeAt when
	// it was (Unix ns): what a grant acknowledges, and from when its ack
	// delay counts. ackedTo is the newest acknowledged (by an ack or a
	// grant), lastAckAt when (Unix ns).
	whole     atomic.Uint64
	wholeAt   atomic.Int64
	ackedTo   atomic.Uint64
	lastAckAt atomic.Int64
	// waitingB are the wire bytes come in whole since the last ack or
	// grant went out.
	waitingB atomic.Int64

	mu     sync.Mutex // serialises the callback with Close; guards below
	expect uint64
	// ackBuf is the ack frame's buffer; ackTimer sends a delayed ack
	// (Options.AckDelay) while ackArmed.
	ackBuf   []byte
	ackTimer *time.Timer
	ackArmed bool
	dec      *frame.Decoder
	asm      []byte // chunks of the message being reassembled
	asmH     frame.Header
	asmOn    bool
	asmN     uint32 // chunks so far
	asmSz    int64
	// asmHeld is what the reassembly buffer is charged to the query's
	// memory (its allocator's Charger): a message larger than the
	// server's max payload is held whole here before it is decoded.
	asmHeld int64
	err     error
	errCh   chan struct{}
	closed  bool
	// A gap: message expect went missing (a later one came first). The
	// receiver asks for it again every Retry until it comes, or fails the
	// link after GapTimeout.
	gapOn    bool
	gapSince time.Time
	lastAsk  time.Time
	gapTimer *time.Timer

	consumed uint64 // Recv's goroutine only
	eof      bool
	// residence is the longest the worker kept a batch (ReportResidence)
	// since the last ack, which carries it to the sender.
	residence atomic.Int64

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
		q:       make(chan item, t.cfg.MaxWindow+1), // the largest window plus the end frame
		expect:  1,
		dec:     frame.NewDecoder(t.cfg.Allocator),
		errCh:   make(chan struct{}),
		closeCh: make(chan struct{}),
	}
	r.window.Store(uint64(w))
	r.granted.Store(uint64(w))
	if t.cfg.MaxWindow > t.cfg.Window {
		r.byteWindow = t.cfg.WindowBytes
		r.grantedBytes.Store(uint64(r.byteWindow))
	}
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

// publishGrant sends the cumulative grant, and with it the ack of every
// message here in whole: while data flow, acks ride on the grants. Two
// goroutines may race to send grants; the sender keeps the larger grant
// and the larger ack, so order does not matter.
func (r *receiver) publishGrant() {
	h := header(r.link, frame.KindCredit)
	h.Total = frame.CreditLen
	r.grantMu.Lock()
	defer r.grantMu.Unlock()
	now := time.Now().UnixNano()
	// whole before wholeAt: a message that becomes whole between the two
	// makes the delay short, and the sender's sample slow, never fast.
	if h.Seq = r.whole.Load(); h.Seq > 0 {
		h.Epoch = uint64(max(0, now-r.wholeAt.Load()))
		h.Ingest = r.residence.Swap(0)
	}
	r.grantBuf = frame.EncodeCredit(frame.Append(r.grantBuf[:0], h, nil), frame.Credit{Messages: r.granted.Load(), Bytes: r.grantedBytes.Load()})
	if r.control(r.creditSubj, r.grantBuf) == nil && h.Seq > 0 {
		r.acknowledged(h.Seq, now)
		r.waitingB.Store(0)
	}
}

// acknowledged notes that an ack of every message up to seq went out at
// now (Unix ns).
func (r *receiver) acknowledged(seq uint64, now int64) {
	for {
		cur := r.ackedTo.Load()
		if seq <= cur || r.ackedTo.CompareAndSwap(cur, seq) {
			break
		}
	}
	r.lastAckAt.Store(now)
}

// fail records the first protocol error; r.mu is held.
func (r *receiver) fail(err error) {
	if r.err == nil {
		r.err = err
		close(r.errCh)
	}
	r.dropAsm()
	r.dec.Close()
}

// dropAsm lets go of the message being reassembled, and of its charge;
// r.mu is held.
func (r *receiver) dropAsm() {
	r.asmOn, r.asm = false, nil
	if r.asmHeld > 0 {
		if ch, ok := r.t.cfg.Allocator.(dataflow.Charger); ok {
			ch.Uncharge(r.asmHeld)
		}
		r.asmHeld = 0
	}
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
		r.publishGrant() // it acknowledges too
		if r.gapOn {
			r.askAgain(time.Now())
		}
		return
	case frame.KindEnd:
		r.m.ControlBytes(len(msg.Data))
	case frame.KindData, frame.KindProgress:
		r.m.Wire(len(msg.Data))
	default:
		r.fail(protocolError(r.link, "%s frame on the data subject", h.Kind))
		return
	}
	switch {
	case h.Seq < r.expect:
		// Sent again, and here already (its ack was lost or late): drop
		// it, and say again how far this end got.
		if h.Chunk == 0 {
			r.m.Duplicate()
			r.ack(r.expect - 1)
		}
		return
	case h.Seq > r.expect:
		r.lost()
		return
	}
	if h.Chunks > 1 {
		if body = r.assemble(h, body, size); body == nil {
			return // more chunks to come, lost, or failed
		}
		h, size = r.asmH, r.asmSz
	} else if r.asmOn {
		r.fail(protocolError(r.link, "message %d in one frame while its chunks were arriving", h.Seq))
		return
	}
	r.expect++
	r.gapOn = false
	it := item{h: h, size: size, arrived: time.Now().UnixNano()}
	if h.Kind == frame.KindData {
		if h.Flags&frame.FlagFrontier != 0 {
			if body, it.frontier, err = frame.SplitFrontier(body); err != nil {
				r.fail(fmt.Errorf("%w on %s: message %d: %w", relay.ErrProtocol, r.link, h.Seq, err))
				return
			}
		}
		rec, err := r.dec.Decode(body, h.Flags&frame.FlagSchema != 0)
		if err != nil {
			r.fail(fmt.Errorf("%w on %s: message %d: %w", relay.ErrProtocol, r.link, h.Seq, err))
			return
		}
		it.rec = rec
	}
	// Acks are cumulative, so one covers every message since the last
	// (TCP's delayed ack, JetStream's AckAll), and every grant is one
	// (publishGrant): a stream the consumer keeps up with is acknowledged
	// a grant per half window, with no frame of its own. An ack goes on
	// its own once three quarters of the window wait for one (a consumer
	// that lags: the sender keeps its copies, and its buffers, until
	// then), and once nothing more waits in the subscription (the
	// receiver has caught up: a message that came alone is acked at
	// once), unless an ack went out within AckDelay, which then covers
	// it. Large messages are acknowledged at least every ackBytes: an ack
	// per megabytes costs nothing, and the sender's copies (and its ack
	// timeout's clock) do not wait on most of a window of them. Each ack says how long its newest message waited for it, so
	// the sender's bandwidth sample (Jellyfish 6) reads neither that wait
	// nor a slow consumer as a slow link.
	r.whole.Store(h.Seq)
	r.wholeAt.Store(it.arrived)
	w := r.window.Load()
	switch {
	case h.Seq-r.ackedTo.Load() >= max(1, w-w/4) || r.waitingB.Add(size) >= ackBytes:
		r.ack(h.Seq)
	case caughtUp(msg):
		r.ackCaughtUp(it.arrived)
	}
	r.push(it)
}

// ackCaughtUp acknowledges everything here now that the receiver has
// caught up, or, when an ack went out within AckDelay, arms the delayed
// ack for the rest of that delay; r.mu is held.
func (r *receiver) ackCaughtUp(now int64) {
	wait := r.lastAckAt.Load() + int64(r.t.ackDly) - now
	if r.t.ackDly <= 0 || wait <= 0 {
		r.ack(r.whole.Load())
		return
	}
	r.armAck(time.Duration(wait))
}

// armAck sends the delayed ack in d unless it is armed already; r.mu is
// held. Its timer is the receiver's, so arming allocates nothing.
func (r *receiver) armAck(d time.Duration) {
	if r.ackArmed {
		return
	}
	r.ackArmed = true
	if r.ackTimer == nil {
		r.ackTimer = time.AfterFunc(d, r.ackTick)
	} else {
		r.ackTimer.Reset(d)
	}
}

// ackTick is the delayed ack: nothing when a grant has acknowledged
// everything meanwhile, a later try when one went out within AckDelay
// (data still flow, grants still carry the acks), else the ack.
func (r *receiver) ackTick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ackArmed = false
	whole := r.whole.Load()
	if r.closed || r.err != nil || whole <= r.ackedTo.Load() {
		return
	}
	if wait := r.lastAckAt.Load() + int64(r.t.ackDly) - time.Now().UnixNano(); wait > 0 {
		r.armAck(time.Duration(wait))
		return
	}
	r.ack(whole)
}

// caughtUp says whether msg's subscription has nothing more waiting
// behind msg (nats.go counts the message its callback handles as pending
// until the callback returns).
func caughtUp(msg *nats.Msg) bool {
	if msg.Sub == nil {
		return true
	}
	n, _, err := msg.Sub.Pending()
	return err != nil || n <= 1
}

// ReportResidence implements relay.ResidenceReporter: the next ack
// carries the longest residence reported since the last one.
func (r *receiver) ReportResidence(d time.Duration) {
	for {
		cur := r.residence.Load()
		if int64(d) <= cur || r.residence.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// ack tells the sender this end has every message up to seq, and how long
// the newest has waited for it; r.mu is held. The frame is built in a
// buffer the receiver keeps (NATS copies it out).
func (r *receiver) ack(seq uint64) {
	if seq == 0 {
		return
	}
	h := header(r.link, frame.KindAck)
	h.Seq = seq
	h.Ingest = r.residence.Swap(0)
	now := time.Now().UnixNano()
	if seq == r.whole.Load() {
		h.Epoch = uint64(max(0, now-r.wholeAt.Load()))
	}
	r.ackBuf = frame.Append(r.ackBuf[:0], h, nil)
	if r.control(r.creditSubj, r.ackBuf) == nil {
		r.acknowledged(seq, now)
		r.waitingB.Store(0)
	}
}

// ackBytes are the wire bytes after which a receiver acknowledges
// whatever else waits for its ack.
const ackBytes = 4 << 20

// lost notes that message r.expect went missing (a later frame came, or a
// chunk of it was skipped): it drops what it had of it and asks the sender
// for it again, at most once per Retry; r.mu is held.
func (r *receiver) lost() {
	r.dropAsm()
	now := time.Now()
	if !r.gapOn {
		r.gapOn, r.gapSince = true, now
		r.m.Gap()
		r.askAgain(now)
		if r.gapTimer == nil {
			r.gapTimer = time.AfterFunc(r.t.retry, r.gapTick)
		} else {
			r.gapTimer.Reset(r.t.retry)
		}
		return
	}
	if now.Sub(r.lastAsk) >= r.t.retry {
		r.askAgain(now)
	}
}

func (r *receiver) askAgain(now time.Time) {
	h := header(r.link, frame.KindResend)
	h.Seq = r.expect
	_ = r.control(r.creditSubj, frame.Append(nil, h, nil))
	r.lastAsk = now
}

// gapTick asks again for a missing message (the request may be lost too)
// until it comes, and fails the link once GapTimeout has passed.
func (r *receiver) gapTick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.err != nil || !r.gapOn {
		return
	}
	if time.Since(r.gapSince) >= r.t.gapTO {
		r.fail(fmt.Errorf("%w on %s: message %d is missing and its sender did not send it again within %v (it is gone, or no longer holds it)",
			relay.ErrLost, r.link, r.expect, r.t.gapTO))
		return
	}
	r.askAgain(time.Now())
	r.gapTimer.Reset(r.t.retry)
}

// assemble adds a chunk to the message being reassembled and returns the
// whole body once the last chunk is in, nil before; r.mu is held.
func (r *receiver) assemble(h frame.Header, body []byte, size int64) []byte {
	if h.Chunk == 0 {
		if h.Total > uint64(r.t.cfg.MaxMessageBytes) {
			r.fail(protocolError(r.link, "message of %d bytes, at most %d", h.Total, r.t.cfg.MaxMessageBytes))
			return nil
		}
		r.dropAsm()
		// The whole message is the query's memory from its first chunk
		// on (a frame of a camera, a tensor: megabytes, where one chunk
		// is the server's max payload): a budget without room for it
		// fails the link, and the query, before the buffer is made.
		if ch, ok := r.t.cfg.Allocator.(dataflow.Charger); ok {
			if err := ch.Charge(int64(h.Total)); err != nil {
				r.fail(fmt.Errorf("%s: message %d of %s in %d chunks: %w", r.link, h.Seq, dataflow.Bytes(int64(h.Total)), h.Chunks, err))
				return nil
			}
			r.asmHeld = int64(h.Total)
		}
		// A fresh buffer per message: the decoded record may keep pointing
		// into it (zero-copy), exactly as a single-chunk record points into
		// its NATS message.
		r.asm, r.asmH, r.asmOn, r.asmN, r.asmSz = make([]byte, 0, h.Total), h, true, 0, 0
	}
	a := &r.asmH
	if !r.asmOn || h.Chunk != r.asmN {
		r.lost() // a chunk went missing: the whole message comes again
		return nil
	}
	if h.Seq != a.Seq || h.Chunks != a.Chunks || h.Total != a.Total ||
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
	if uint64(len(r.asm)) != a.Total {
		r.fail(protocolError(r.link, "message %d has %d of %d bytes", h.Seq, len(r.asm), a.Total))
		return nil
	}
	// The decoder charges the record it makes (zero-copy: this body, for
	// as long as the record lives; else its copies), so the buffer's own
	// charge ends here.
	body = r.asm
	r.dropAsm()
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
	msg := relay.Message{Seq: it.h.Seq, Epoch: it.h.Epoch, Ingest: it.h.Ingest, Arrived: it.arrived}
	switch it.h.Kind {
	case frame.KindEnd:
		r.eof = true
		return relay.Message{}, io.EOF
	case frame.KindProgress:
		msg.Kind = relay.KindProgress
		r.m.ProgressMsg()
	case frame.KindData:
		msg.Kind, msg.Record, msg.Frontier = relay.KindData, it.rec, it.frontier
		r.m.Batch(it.rec.NumRows())
		r.largest = max(r.largest, it.size)
		r.consumedBytes += it.h.Total
		if it.frontier != 0 {
			r.m.ProgressMsg()
		}
	}
	// Top the grant up once half the window is used, in messages or in
	// bytes, so a busy link sends a credit frame every window/2 messages,
	// not every message.
	r.consumed++
	w := r.window.Load()
	gb := r.grantedBytes.Load()
	if r.granted.Load()-r.consumed <= w-max(1, w/2) || gb > 0 && int64(gb)-int64(r.consumedBytes) <= r.byteWindow/2 {
		w = r.grow()
		// Grants are cumulative: a window that shrank tops up later.
		r.granted.Store(max(r.granted.Load(), r.consumed+w))
		if gb > 0 {
			r.grantedBytes.Store(max(gb, r.consumedBytes+uint64(r.byteWindow)))
		}
		r.publishGrant()
	}
	return msg, nil
}

// grow sizes the window by bytes from the largest data message of the
// last half window and returns it: WindowBytes of them, between
// Config.Window and MaxWindow. Small batches then cost a grant per
// megabyte, not per 16 messages; large ones keep Window. Recv's goroutine
// only.
func (r *receiver) grow() uint64 {
	cfg := &r.t.cfg
	w := r.window.Load()
	if r.largest > 0 && cfg.MaxWindow > cfg.Window {
		w = uint64(cfg.GrownWindow(r.largest))
		r.window.Store(w)
		r.byteWindow = max(cfg.WindowBytes, int64(cfg.Window)*r.largest)
	}
	r.largest = 0
	return w
}

// Close drops buffered messages and tells the sender, so a sender blocked on
// credit fails with ErrPeerClosed instead of waiting forever.
func (r *receiver) Close() error {
	var err error
	r.closeOnce.Do(func() {
		r.mu.Lock()
		r.closed = true
		r.dropAsm()
		if r.gapTimer != nil {
			r.gapTimer.Stop()
		}
		if r.ackTimer != nil {
			r.ackTimer.Stop()
		}
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
