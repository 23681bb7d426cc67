// Package inproc is the in-process relay backend: links are buffered Go
// channels and records pass by reference (retained, never copied or
// serialised). It serves tests, single-process runs without NATS, and as the
// ceiling the NATS backend is measured against. It must not import NATS.
package inproc

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/relay"
)

// Transport connects senders and receivers opened through the same value.
type Transport struct {
	cfg   relay.Config
	ends  relay.Ends
	mu    sync.Mutex
	pipes map[relay.LinkID]*pipe
}

var _ relay.Transport = (*Transport)(nil)

// New returns an empty in-process transport.
func New(cfg relay.Config) *Transport {
	return &Transport{cfg: cfg.WithDefaults(), pipes: make(map[relay.LinkID]*pipe)}
}

type item struct {
	msg   relay.Message
	bytes int64
}

// pipe is one link. credits holds a token per message in flight: a sender
// puts one in before pushing and the receiver takes it out after handing the
// message out, so a full credits channel is a sender out of credit and the
// receiver never buffers more than the window.
type pipe struct {
	credits  chan struct{}
	ch       chan item
	end      chan struct{} // closed by the sender's Close, after its last message
	gone     chan struct{} // closed by the receiver's Close
	endOnce  sync.Once
	goneOnce sync.Once
	recvM    *relay.Meter
	// guarded by Transport.mu
	hadSender, hadReceiver bool
	senderOpen, recvOpen   bool
}

func (p *pipe) drain() {
	for {
		select {
		case it := <-p.ch:
			p.recvM.Dequeue(it.bytes)
			<-p.credits
			if it.msg.Record != nil {
				it.msg.Record.Release()
			}
		default:
			return
		}
	}
}

// attach finds or makes the pipe of link for one end.
func (t *Transport) attach(link relay.LinkID, dir relay.Direction) (*pipe, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.pipes[link]
	if p == nil {
		p = &pipe{
			credits: make(chan struct{}, t.cfg.Window),
			ch:      make(chan item, t.cfg.Window),
			end:     make(chan struct{}),
			gone:    make(chan struct{}),
			recvM:   relay.NewMeter(link, relay.Recv),
		}
		t.pipes[link] = p
	}
	// A link's stream has one sender and one receiver from start to end; a
	// second one while the first stream is not fully closed would interleave.
	if dir == relay.Send {
		if p.hadSender {
			return nil, fmt.Errorf("open sender of %s: %w", link, relay.ErrLinkInUse)
		}
		p.hadSender, p.senderOpen = true, true
	} else {
		if p.hadReceiver {
			return nil, fmt.Errorf("open receiver of %s: %w", link, relay.ErrLinkInUse)
		}
		p.hadReceiver, p.recvOpen = true, true
	}
	return p, nil
}

func (t *Transport) detach(link relay.LinkID, p *pipe, dir relay.Direction) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if dir == relay.Send {
		p.senderOpen = false
	} else {
		p.recvOpen = false
	}
	// Forget the pipe once the receiver is done with it: either it closed, or
	// it has not opened and the sender went away without sending anything.
	if !p.senderOpen && !p.recvOpen && (p.hadReceiver || len(p.ch) == 0) {
		if t.pipes[link] == p {
			delete(t.pipes, link)
		}
	}
}

// OpenSender implements relay.Transport.
func (t *Transport) OpenSender(ctx context.Context, link relay.LinkID) (relay.Sender, error) {
	if err := link.Validate(); err != nil {
		return nil, err
	}
	p, err := t.attach(link, relay.Send)
	if err != nil {
		return nil, err
	}
	s := &sender{t: t, p: p, link: link, closeCh: make(chan struct{})}
	m, err := t.ends.Add(link, relay.Send, s)
	if err != nil {
		t.detach(link, p, relay.Send)
		return nil, err
	}
	s.m = m
	return s, nil
}

// OpenReceiver implements relay.Transport.
func (t *Transport) OpenReceiver(ctx context.Context, link relay.LinkID) (relay.Receiver, error) {
	if err := link.Validate(); err != nil {
		return nil, err
	}
	p, err := t.attach(link, relay.Recv)
	if err != nil {
		return nil, err
	}
	r := &receiver{t: t, p: p, link: link, closeCh: make(chan struct{})}
	if err := t.ends.AddMeter(p.recvM, r); err != nil {
		t.detach(link, p, relay.Recv)
		return nil, err
	}
	return r, nil
}

// Stats implements relay.Transport.
func (t *Transport) Stats() []relay.LinkStats { return t.ends.Stats() }

// Close implements relay.Transport.
func (t *Transport) Close() error { return t.ends.CloseAll() }

type sender struct {
	t       *Transport
	p       *pipe
	link    relay.LinkID
	m       *relay.Meter
	mu      sync.Mutex // orders messages: seq and channel order agree
	seq     uint64
	closed  atomic.Bool
	closeCh chan struct{}
	once    sync.Once
}

func (s *sender) Link() relay.LinkID     { return s.link }
func (s *sender) Stats() relay.LinkStats { return s.m.Snapshot() }

func (s *sender) SendData(ctx context.Context, epoch uint64, rec arrow.Record) error {
	return s.SendDataAt(ctx, epoch, 0, rec)
}

func (s *sender) SendDataAt(ctx context.Context, epoch uint64, ingest int64, rec arrow.Record) error {
	rec.Retain()
	n := relay.RecordBytes(rec)
	if err := s.send(ctx, relay.Message{Kind: relay.KindData, Epoch: epoch, Record: rec, Ingest: ingest}, n); err != nil {
		rec.Release()
		return err
	}
	s.m.Batch(rec.NumRows())
	s.m.Wire(int(n))
	return nil
}

func (s *sender) SendProgress(ctx context.Context, frontier uint64) error {
	const n = 8 // what a frontier is worth on a wire
	if err := s.send(ctx, relay.Message{Kind: relay.KindProgress, Epoch: frontier}, n); err != nil {
		return err
	}
	s.m.ProgressMsg()
	s.m.Wire(n)
	return nil
}

func (s *sender) send(ctx context.Context, msg relay.Message, n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return fmt.Errorf("send on %s: %w", s.link, relay.ErrClosed)
	}
	select {
	case <-s.p.gone:
		return fmt.Errorf("send on %s: %w", s.link, relay.ErrPeerClosed)
	default:
	}
	msg.Seq = s.seq + 1
	select {
	case s.p.credits <- struct{}{}:
	default:
		start := time.Now()
		defer func() { s.m.Stall(time.Since(start)) }()
		select {
		case s.p.credits <- struct{}{}:
		case <-s.p.gone:
			return fmt.Errorf("send on %s: %w", s.link, relay.ErrPeerClosed)
		case <-s.closeCh:
			return fmt.Errorf("send on %s: %w", s.link, relay.ErrClosed)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// Holding a credit, the push cannot block: ch holds at most one item per
	// credit. The gauge goes up before the item can be taken, so it never
	// dips below zero and never exceeds the window.
	s.p.recvM.Enqueue(n)
	s.p.ch <- item{msg: msg, bytes: n}
	s.seq++
	// The receiver may have closed and drained between our check and the
	// push; whoever sees the closed pipe last drains it, so nothing leaks.
	select {
	case <-s.p.gone:
		s.p.drain()
	default:
	}
	return nil
}

func (s *sender) Close() error {
	first := false
	s.once.Do(func() {
		first = true
		s.closed.Store(true)
		close(s.closeCh)
	})
	if !first {
		return nil
	}
	s.mu.Lock() // wait out a send in progress so End follows its message
	s.p.endOnce.Do(func() { close(s.p.end) })
	s.mu.Unlock()
	s.m.MarkClosed()
	s.t.ends.Remove(s.link, relay.Send)
	s.t.detach(s.link, s.p, relay.Send)
	return nil
}

type receiver struct {
	t       *Transport
	p       *pipe
	link    relay.LinkID
	closeCh chan struct{}
	once    sync.Once
}

func (r *receiver) Link() relay.LinkID     { return r.link }
func (r *receiver) Stats() relay.LinkStats { return r.p.recvM.Snapshot() }

func (r *receiver) Recv(ctx context.Context) (relay.Message, error) {
	select {
	case <-r.closeCh:
		return relay.Message{}, fmt.Errorf("receive on %s: %w", r.link, relay.ErrClosed)
	default:
	}
	select {
	case it := <-r.p.ch:
		return r.deliver(it), nil
	case <-r.p.end:
		// End is closed after the last push; whatever is left comes first.
		select {
		case it := <-r.p.ch:
			return r.deliver(it), nil
		default:
			return relay.Message{}, io.EOF
		}
	case <-r.closeCh:
		return relay.Message{}, fmt.Errorf("receive on %s: %w", r.link, relay.ErrClosed)
	case <-ctx.Done():
		return relay.Message{}, ctx.Err()
	}
}

func (r *receiver) deliver(it item) relay.Message {
	r.p.recvM.Dequeue(it.bytes)
	<-r.p.credits
	if it.msg.Kind == relay.KindData {
		r.p.recvM.Batch(it.msg.Record.NumRows())
	} else {
		r.p.recvM.ProgressMsg()
	}
	r.p.recvM.Wire(int(it.bytes))
	return it.msg
}

func (r *receiver) Close() error {
	first := false
	r.once.Do(func() {
		first = true
		close(r.closeCh)
		r.p.goneOnce.Do(func() { close(r.p.gone) })
	})
	if !first {
		return nil
	}
	r.p.drain()
	r.p.recvM.MarkClosed()
	r.t.ends.Remove(r.link, relay.Recv)
	r.t.detach(r.link, r.p, relay.Recv)
	return nil
}
