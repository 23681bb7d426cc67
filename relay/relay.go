// Package relay moves Arrow batches and progress updates between dataflow
// workers. It owns the Transport interface (one directed link per query, edge,
// sender and receiver), the per-link meters that are the measured network cost
// of a plan, the shared configuration, and DataflowTransport, which plugs any
// backend into dataflow.Transport. The backends live in subpackages:
// relay/inproc (Go channels) and relay/natsrelay (NATS); relay/frame is the
// wire format, relay/natsserver the embedded server, relay/relaytest the
// conformance suite both backends pass, bench/relay the relay-vs-raw-NATS
// benchmark behind `tierflow bench relay`.
//
// Every backend keeps the same promises: messages of one link arrive in the
// order they were sent, exactly once, also when the network loses some of
// them (the NATS backend sends them again); progress travels on the same path as
// data, so a frontier never overtakes its batches; a receiver grants credit for
// at most Config.Window messages (NATS: up to MaxWindow while they are
// small, see Config), so a slow receiver stalls its sender and memory stays
// bounded.
//
// relay sits above dataflow and below runtime and cmd: it must not import
// runtime, operators, planner or cmd.
package relay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/relay/frame"
)

// Error kinds; backends wrap them with %w.
var (
	ErrClosed     = errors.New("relay link closed")
	ErrPeerClosed = errors.New("relay peer closed the link")
	ErrLinkInUse  = errors.New("relay link already open")
	ErrBadLink    = errors.New("invalid relay link")
	ErrProtocol   = errors.New("relay protocol violation")
	// ErrLost: a message went missing and its sender did not send it again
	// (it is gone, or no longer holds it).
	ErrLost = errors.New("relay message lost")
)

// LinkID names one directed link: the batches of one dataflow edge of one
// query going from one worker to another. Workers are numbered per query.
type LinkID struct {
	Query    string
	Edge     uint32
	Sender   uint32
	Receiver uint32
}

func (l LinkID) String() string {
	return l.Query + "/e" + strconv.FormatUint(uint64(l.Edge), 10) + "/" +
		strconv.FormatUint(uint64(l.Sender), 10) + "->" + strconv.FormatUint(uint64(l.Receiver), 10)
}

// Validate checks that the query id is usable as a NATS subject token and fits
// the frame header, so both backends accept exactly the same links.
func (l LinkID) Validate() error {
	if l.Query == "" {
		return fmt.Errorf("%w: empty query id", ErrBadLink)
	}
	if len(l.Query) > frame.MaxQueryLen {
		return fmt.Errorf("%w: query id %.20q... is %d bytes, at most %d", ErrBadLink, l.Query, len(l.Query), frame.MaxQueryLen)
	}
	for i, r := range l.Query {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
		if !ok {
			return fmt.Errorf("%w: query id %q has %q at byte %d (want letters, digits, '-' or '_')", ErrBadLink, l.Query, r, i)
		}
	}
	return nil
}

// Kind is what a received message carries.
type Kind uint8

const (
	KindData     Kind = 1
	KindProgress Kind = 2
)

func (k Kind) String() string {
	switch k {
	case KindData:
		return "data"
	case KindProgress:
		return "progress"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Message is what a Receiver hands out. For data, the receiver owns one
// reference to Record and must Release it.
type Message struct {
	Kind   Kind
	Seq    uint64       // 1, 2, ... per link, over data and progress
	Epoch  uint64       // data: the batch's timestamp; progress: the new frontier
	Record arrow.Record // data
	Ingest int64        // data: when its rows entered the query (Unix ns; 0: unknown)
	// Arrived is, for data, when the receiver had it in whole (Unix ns,
	// its own clock; 0: not measured): the start of its residence there
	// (dataflow.Header.Arrived).
	Arrived int64
	// Frontier is, for data sent with FrontierSender.SendDataThen, the
	// sender's frontier once this batch is in (a progress update carried
	// on the batch; 0: none).
	Frontier uint64
}

// FrontierSender is a Sender that carries a progress update on a data
// message: SendDataThen is SendDataAt followed by SendProgress(frontier),
// in one message where the backend can (natsrelay: no frame, credit or
// ack of its own for the progress). The receiver's Message has the
// batch and, in Frontier, the update; a backend may still send the two
// apart (natsrelay does now and then, for the round trip of a message
// without payload that its bandwidth estimate takes out).
type FrontierSender interface {
	SendDataThen(ctx context.Context, epoch uint64, ingest int64, rec arrow.Record, frontier uint64) error
}

// ResidenceReporter is a Receiver that passes back to its sender how long
// the receiving worker keeps its batches (dataflow.ResidenceMeter): the
// NATS backend on its acks, so the sender's LinkStats.Residence has the
// receiver's measures.
type ResidenceReporter interface {
	ReportResidence(d time.Duration)
}

// Sender is the sending end of one link. Its methods are safe for concurrent
// use, but messages sent concurrently are ordered only by who got there first.
type Sender interface {
	Link() LinkID
	// SendData sends rec at epoch. It blocks while the receiver has granted no
	// credit, until ctx is done. The caller keeps its reference to rec.
	SendData(ctx context.Context, epoch uint64, rec arrow.Record) error
	// SendDataAt is SendData of a batch whose rows entered the query at
	// ingest (Unix ns); the receiver's Message carries it.
	SendDataAt(ctx context.Context, epoch uint64, ingest int64, rec arrow.Record) error
	// SendProgress announces that nothing below frontier will be sent on this
	// link any more. It travels behind every batch sent before it, so the
	// receiver never sees a frontier overtake its data.
	SendProgress(ctx context.Context, frontier uint64) error
	// Close ends the stream: the receiver sees io.EOF after the last message.
	Close() error
	Stats() LinkStats
}

// ContextCloser is a Sender whose Close waits for its receiver to
// acknowledge everything sent, so it can send again what went missing
// (natsrelay). CloseContext stops waiting when ctx is done: a run that was
// cancelled does not wait for receivers that may be gone.
type ContextCloser interface {
	CloseContext(ctx context.Context) error
}

// CloseSender closes s, waiting no longer than ctx allows where s waits.
func CloseSender(ctx context.Context, s Sender) error {
	if c, ok := s.(ContextCloser); ok {
		return c.CloseContext(ctx)
	}
	return s.Close()
}

// Receiver is the receiving end of one link.
type Receiver interface {
	Link() LinkID
	// Recv returns the next message, io.EOF once the sender closed and every
	// message was received, or an error wrapping ErrProtocol if the link broke.
	Recv(ctx context.Context) (Message, error)
	// Close releases buffered messages and makes a blocked sender fail with
	// ErrPeerClosed.
	Close() error
	Stats() LinkStats
}

// Transport opens the ends of links. Either end may open first; a sender
// waits for its receiver's first credit before sending.
type Transport interface {
	OpenSender(ctx context.Context, link LinkID) (Sender, error)
	OpenReceiver(ctx context.Context, link LinkID) (Receiver, error)
	// Stats snapshots every link end opened through this transport, closed ones
	// included: the meters are the measured network cost and must outlive links.
	Stats() []LinkStats
	// Close closes every open end.
	Close() error
}

// Config is shared by both backends.
type Config struct {
	// Window is the credit per link in messages (data or progress): at most
	// Window messages are in flight or buffered at the receiver. Default
	// DefaultWindow.
	Window int
	// MaxWindow and WindowBytes let the NATS backend's window grow while
	// messages are small: a receiver grants up to WindowBytes divided by
	// the largest message of its last half window, between Window and
	// MaxWindow messages, so a grant's fixed cost (a frame, the sender's
	// wake-up) is paid per bytes, not per message, and a window of large
	// messages never grows. Such a window also grants bytes: the bytes in
	// flight stay within WindowBytes (or Window of the largest message
	// lately taken, if more), also when large messages follow small ones
	// that were granted many messages. Left at 0 with Window unset: DefaultMaxWindow
	// and DefaultWindowBytes; a Window set (a test's, a worker's
	// RowsInFlight) stays fixed unless MaxWindow is set too.
	MaxWindow   int
	WindowBytes int64
	// Allocator holds what a receiver allocates for the records it decodes.
	// Plain layouts (fixed-width, strings, lists, fixed-size lists, structs)
	// are decoded in place and reference the received message instead; the
	// garbage collector frees that when the last column is released and
	// dropped. Default memory.DefaultAllocator.
	Allocator memory.Allocator
	// MaxMessageBytes refuses a single message (after reassembly) above this
	// size, so a forged header cannot make a receiver allocate without bound.
	// Default 1 GiB.
	MaxMessageBytes int64
}

// The credit window's defaults. 32 messages of 64 rows (17 KB each) cost
// a grant, and the sender a wake-up, per 16 messages: a third more CPU per
// MB than raw NATS (docs/benchmarks.md, "window of 128"); 2 MiB in flight
// make that a grant per MB whatever the batch size, and 256 messages bound
// the receiver's queue when they are tiny.
const (
	DefaultWindow      = 32
	DefaultMaxWindow   = 256
	DefaultWindowBytes = 2 << 20
)

// GrownWindow is the window in messages a receiver of c (with its
// defaults) grants when the largest message it took lately has largest
// bytes: WindowBytes of them, between Window and MaxWindow; Window where it
// does not grow.
func (c Config) GrownWindow(largest int64) int {
	if c.MaxWindow <= c.Window || largest <= 0 {
		return c.Window
	}
	return int(min(max(c.WindowBytes/largest, int64(c.Window)), int64(c.MaxWindow)))
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Window <= 0 {
		c.Window = DefaultWindow
		if c.MaxWindow <= 0 {
			c.MaxWindow = DefaultMaxWindow
		}
	}
	c.MaxWindow = max(c.MaxWindow, c.Window)
	if c.WindowBytes <= 0 {
		c.WindowBytes = DefaultWindowBytes
	}
	if c.Allocator == nil {
		c.Allocator = memory.DefaultAllocator
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = 1 << 30
	}
	return c
}

// Direction says which end of a link a LinkStats describes.
type Direction string

const (
	Send Direction = "send"
	Recv Direction = "recv"
)

// LinkStats is a snapshot of one link end's meter.
type LinkStats struct {
	Link             LinkID        `json:"link"`
	Direction        Direction     `json:"direction"`
	Batches          uint64        `json:"batches"`            // data messages
	Rows             uint64        `json:"rows"`               // rows in those batches
	Progress         uint64        `json:"progress"`           // progress updates: messages alone and carried on a batch (FrontierSender)
	Bytes            uint64        `json:"bytes"`              // payload bytes on the wire, frame headers included
	Frames           uint64        `json:"frames"`             // wire messages (chunks) carrying data and progress
	Control          uint64        `json:"control"`            // bytes of hello, credit, end and close frames
	Stalls           uint64        `json:"stalls"`             // sends that waited for credit
	Stalled          time.Duration `json:"stalled_ns"`         // time spent waiting for credit
	Buffered         int64         `json:"buffered"`           // receiver: messages arrived but not yet received
	MaxBuffered      int64         `json:"max_buffered"`       // receiver: high-water mark of Buffered
	MaxBufferedBytes int64         `json:"max_buffered_bytes"` // receiver: high-water mark of buffered bytes
	Closed           bool          `json:"closed"`
	// Sender ends of links whose receiver acknowledges each data message
	// (NATS): the bandwidth estimated from the acks (bytes per second,
	// harmonic mean over the last BandwidthWindow), the messages' smoothed
	// round trip, and how many acks came back.
	AckBandwidthBps float64 `json:"ack_bandwidth_bps,omitempty"`
	// LastAckBps is the latest message's sample alone: a drop shows in
	// it at the next ack, in the mean only as slow samples pile up.
	LastAckBps float64 `json:"last_ack_bps,omitempty"`
	// RecentAckBps is the larger of the last two samples: a drop that
	// held for two acks, not one slow ack.
	RecentAckBps float64       `json:"recent_ack_bps,omitempty"`
	SRTT         time.Duration `json:"srtt_ns,omitempty"`
	Acks         uint64        `json:"acks,omitempty"`
	// LastAck is when the sender's latest ack came (the zero time:
	// none): every message Acks counts was acknowledged by then.
	LastAck time.Time `json:"-"`
	// AckTimes are the latest ack events, oldest first.
	AckTimes []dataflow.AckTime `json:"-"`
	// OldestSent is when the sender's oldest data message still without
	// its ack got the link (the zero time: none).
	OldestSent time.Time `json:"-"`
	// UnackedBytes are a sender's data bytes on the wire whose ack has
	// not come back yet (NATS): what the next batch queues behind.
	UnackedBytes int64 `json:"unacked_bytes,omitempty"`
	// OverdueBps bounds the link's bandwidth now by the oldest data message
	// still without its ack (bytes per second; 0: none on the wire): had the
	// link carried it faster, its ack would be back. A link that just fell
	// shows here before any slow ack does.
	OverdueBps float64 `json:"overdue_bps,omitempty"`
	// TransferBps and LastTransferBps are the same with each message's
	// time on the link alone: its round trip less BaseRTT, the least
	// round trip of the last second's progress messages (no payload).
	// A small message's round trip is mostly BaseRTT, so the ack estimate
	// falls as messages shrink; this one does not (0 before a progress
	// message was acknowledged).
	TransferBps     float64 `json:"transfer_bps,omitempty"`
	LastTransferBps float64 `json:"last_transfer_bps,omitempty"`
	// RecentTransferBps is the larger of the last two transfer samples
	// (as RecentAckBps is of the acks').
	RecentTransferBps float64       `json:"recent_transfer_bps,omitempty"`
	BaseRTT           time.Duration `json:"base_rtt_ns,omitempty"`
	// Samples are the link's latest bandwidth samples, oldest first (up
	// to TailSamples; the transfer rate's where it is measured): the
	// distribution a latency bound's tail is read from.
	Samples []float64 `json:"samples,omitempty"`
	// Residence are the receiver's latest measures of how long its worker
	// kept this link's batches until their results, oldest first (up to
	// TailSamples; sender only, from the acks of backends that carry them).
	Residence []time.Duration `json:"residence,omitempty"`
	// ShapedBps is a shaped link's cap at its last send (bytes per second;
	// 0: not shaped), what the trace gave it.
	ShapedBps float64 `json:"shaped_bps,omitempty"`
	// Links that can lose messages in flight (NATS, across a server
	// restart) repair it: Resent counts a sender's messages sent again,
	// Gaps a receiver's requests for a missing message, Duplicates the
	// messages it got twice and dropped; ResentBytes are the resent
	// messages' wire bytes, which Bytes counts as well.
	Resent      uint64 `json:"resent,omitempty"`
	ResentBytes uint64 `json:"resent_bytes,omitempty"`
	Gaps        uint64 `json:"gaps,omitempty"`
	Duplicates  uint64 `json:"duplicates,omitempty"`
}

// Bandwidth is the link's bandwidth view, which every decision reads by
// its rules (dataflow.LinkBandwidth).
func (s LinkStats) Bandwidth() dataflow.LinkBandwidth {
	return dataflow.NewLinkBandwidth(dataflow.LinkBandwidth{Mean: s.AckBandwidthBps, Latest: s.LastAckBps, Recent: s.RecentAckBps, Samples: s.Samples},
		dataflow.LinkBandwidth{Mean: s.TransferBps, Latest: s.LastTransferBps, Recent: s.RecentTransferBps, Samples: s.Samples})
}
