package dataflow

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Error kinds of the engine. Errors wrap one of these (or a progress error)
// with %w and name the operator, edge or channel involved.
var (
	ErrInvalidGraph = errors.New("dataflow: invalid graph")
	ErrNoCapability = errors.New("dataflow: emit without a held capability")
	ErrClosed       = errors.New("dataflow: closed")
	ErrNoReceiver   = errors.New("dataflow: no receiver listening on channel")
	ErrOperator     = errors.New("dataflow: operator failed")
	ErrProtocol     = errors.New("dataflow: channel protocol violation")
	ErrTransport    = errors.New("dataflow: transport failed")
)

// Inbox is the receiving end a worker hands to a Transport: the queue of one
// operator instance.
type Inbox interface {
	// Deliver enqueues m. It blocks while the inbox is full and the worker
	// runs concurrently (that is the backpressure a transport should pass on
	// to its senders), and returns early with ctx's error. Deliver takes
	// ownership of m.Record in every case; after the instance has finished
	// it releases the record and returns ErrClosed.
	//
	// Calls for one ChannelID must be made in the order the sender sent
	// them and must not overlap; different channels may deliver concurrently.
	Deliver(ctx context.Context, m Message) error
	// Fail reports that channel ch broke for good (a lost connection, a
	// corrupt frame): the receiving instance fails with an error wrapping
	// ErrTransport and err, which fails the run. Later deliveries are
	// refused.
	Fail(ch ChannelID, err error)
}

// Sender is the sending end of one channel.
type Sender interface {
	// Send transmits m. Messages of one Sender arrive in Send order, and a
	// Progress message arrives after every Data message sent before it. Send
	// may block for flow control; it returns early with ctx's error. It takes
	// ownership of m.Record in every case.
	Send(ctx context.Context, m Message) error
	// Close frees the channel's resources. The engine calls it after the
	// Progress message at Closed, or when a run is cancelled.
	Close() error
}

// FrontierCarrier is a Sender that takes a progress update on a Data
// message (Header.Frontier) for less than a message of its own (the NATS
// relay: no frame, credit or ack). A worker then holds a channel's latest
// batch until the end of the step that emitted it, and sends the step's
// frontier advance on it: a source's batch and its watermark, an
// operator's output and its next frontier, go as one message.
type FrontierCarrier interface {
	CarriesFrontier() bool
}

// Transport connects operator instances running on different workers. A
// worker calls Listen for every channel whose receiver it runs, before any
// worker of the dataflow starts sending, and Dial for every channel whose
// sender it runs. Channels between instances of the same worker bypass the
// transport. The last message of a channel is its Progress at Closed; a
// transport may drop the channel's resources after delivering it.
//
// A worker opens its channels together (NewWorker): Listen and Dial may be
// called concurrently.
//
// Implementations: LocalTransport (in process, here) and the NATS relay in
// relay/, which carries Header fields next to an Arrow IPC payload.
type Transport interface {
	Listen(ch ChannelID, in Inbox) error
	Dial(ch ChannelID) (Sender, error)
}

// LocalTransport connects workers of one process: Send is a direct Deliver
// into the receiver's inbox, so its ordering and backpressure are exactly
// the inbox's.
type LocalTransport struct {
	mu      sync.Mutex
	inboxes map[ChannelID]Inbox
}

// NewLocalTransport makes an empty in-process transport.
func NewLocalTransport() *LocalTransport {
	return &LocalTransport{inboxes: make(map[ChannelID]Inbox)}
}

// Listen binds ch's receiving end; binding a channel twice is an error.
func (t *LocalTransport) Listen(ch ChannelID, in Inbox) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.inboxes[ch]; ok {
		return fmt.Errorf("%w: channel %v already has a receiver", ErrInvalidGraph, ch)
	}
	t.inboxes[ch] = in
	return nil
}

// Dial returns ch's sending end. The receiver is looked up on first Send,
// so workers may be built in any order as long as all are built before any
// runs.
func (t *LocalTransport) Dial(ch ChannelID) (Sender, error) {
	return &localSender{t: t, ch: ch}, nil
}

type localSender struct {
	t      *LocalTransport
	ch     ChannelID
	in     Inbox
	closed bool
}

func (s *localSender) Send(ctx context.Context, m Message) error {
	if s.closed {
		m.release()
		return fmt.Errorf("%w: send on closed channel %v", ErrClosed, s.ch)
	}
	if s.in == nil {
		s.t.mu.Lock()
		s.in = s.t.inboxes[s.ch]
		s.t.mu.Unlock()
		if s.in == nil {
			m.release()
			return fmt.Errorf("%w: %v", ErrNoReceiver, s.ch)
		}
	}
	return s.in.Deliver(ctx, m)
}

func (s *localSender) Close() error {
	if !s.closed {
		s.closed = true
		s.t.mu.Lock()
		delete(s.t.inboxes, s.ch)
		s.t.mu.Unlock()
	}
	return nil
}

// directSender feeds an inbox of the same worker without a transport.
type directSender struct{ in Inbox }

func (s directSender) Send(ctx context.Context, m Message) error { return s.in.Deliver(ctx, m) }
func (s directSender) Close() error                              { return nil }
