package relay

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/relay/natsrelay"
	"github.com/tierflow/tierflow/relay/natsserver"
)

// Across processes the receiving ends (the relay receiver and the raw
// subscriber) live in a peer process with its own NATS connection, so every
// batch really crosses a process boundary over TCP. The parent drives the
// peer over a few NATS subjects under one control prefix:
//
//	<control>.ready   peer -> parent, once, when it listens
//	<control>.cmd     parent -> peer, request/reply: a peerReq, answered once
//	                  the receiving end is live (receiver open, first credit
//	                  granted; or raw subscription known to the server)
//	req.Ack           peer -> parent: peerReports (arrivals, done, error)
//	req.Credit        peer -> parent (raw only): 8-byte cumulative frame
//	                  counts, the raw baseline's equal of the relay's credit
//
// Times that span the two processes are wall-clock Unix nanoseconds: the
// peer always runs on the parent's host, so both read the same clock.

// Modes of a run.
const (
	ModeInProcess = "in-process"       // both ends in this process
	ModeProcesses = "across-processes" // the receiving ends in a peer process
)

// ParseMode accepts a mode name or its short form ("processes").
func ParseMode(s string) (string, error) {
	switch strings.TrimSpace(s) {
	case ModeInProcess, "inprocess", "process":
		return ModeInProcess, nil
	case ModeProcesses, "processes", "across":
		return ModeProcesses, nil
	}
	return "", fmt.Errorf("%w: mode %q (want %s or %s)", ErrBadOptions, s, ModeInProcess, "processes")
}

// ErrPeer is wrapped by every failure of the peer process or its protocol.
var ErrPeer = errors.New("relaybench: peer process")

type peerReq struct {
	Op      string       `json:"op"` // "relay", "raw" or "quit"
	Link    relay.LinkID `json:"link"`
	Window  int          `json:"window,omitempty"`
	Subject string       `json:"subject,omitempty"` // raw: the data subject
	Ack     string       `json:"ack,omitempty"`
	Credit  string       `json:"credit,omitempty"` // raw: where frame counts go
	N       int          `json:"n"`                // relay: messages after the priming one; raw: messages
	PerMsg  int          `json:"per_msg,omitempty"`
	Every   int          `json:"every,omitempty"` // raw: frames between frame counts
	Each    bool         `json:"each,omitempty"`  // report every arrival (latency runs)
}

type peerReport struct {
	Kind    string `json:"kind"` // "arrived", "done" or "error"
	I       int    `json:"i"`
	AtNs    int64  `json:"at_ns"` // wall clock of the arrival (done: of the last)
	Batches uint64 `json:"batches,omitempty"`
	Rows    uint64 `json:"rows,omitempty"`
	Bytes   uint64 `json:"bytes,omitempty"`
	CPUNs   int64  `json:"cpu_ns,omitempty"` // peer CPU while the timed messages came in
	Err     string `json:"err,omitempty"`
}

// ServePeer is the peer process's side: it connects to url, answers requests
// under control until told to quit, ctx ends, the connection closes, or stop
// (the parent's end of a pipe; nil for none) reaches EOF, which is how a peer
// notices a parent that died without saying so. `tierflow bench relay-peer`
// and the package's tests call it.
func ServePeer(ctx context.Context, url, control string, stop io.Reader, opts ...nats.Option) error {
	if control == "" {
		return fmt.Errorf("%w: no control subject", ErrBadOptions)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	closed := make(chan struct{})
	nc, err := natsserver.Connect(url, append(slices.Clip(opts), nats.MaxReconnects(0), nats.ClosedHandler(func(*nats.Conn) { close(closed) }))...)
	if err != nil {
		return err
	}
	defer nc.Close()
	if stop != nil {
		go func() {
			_, _ = io.Copy(io.Discard, stop)
			cancel()
		}()
	}
	// Requests run on goroutines of their own; none may start once the
	// peer is shutting down and waiting for the others.
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		stopped bool
	)
	spawn := func(m *nats.Msg, f func()) {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			respond(m, fmt.Errorf("%w: shutting down", ErrPeer))
			return
		}
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	defer func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		wg.Wait()
	}()
	sub, err := nc.Subscribe(control+".cmd", func(m *nats.Msg) {
		var req peerReq
		if err := json.Unmarshal(m.Data, &req); err != nil {
			respond(m, fmt.Errorf("%w: bad request: %v", ErrPeer, err))
			return
		}
		switch req.Op {
		case "quit":
			respond(m, nil)
			cancel()
		case "relay":
			spawn(m, func() { peerRelay(ctx, nc, m, req) })
		case "raw":
			spawn(m, func() { peerRaw(ctx, nc, m, req) })
		default:
			respond(m, fmt.Errorf("%w: unknown op %q", ErrPeer, req.Op))
		}
	})
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.Publish(control+".ready", nil); err != nil {
		return err
	}
	if err := nc.Flush(); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-closed:
		cancel()
	}
	return nil
}

func respond(m *nats.Msg, err error) {
	var b []byte
	if err != nil {
		b = []byte(err.Error())
	}
	_ = m.Respond(b)
}

func report(nc *nats.Conn, subj string, r peerReport) {
	b, _ := json.Marshal(r)
	_ = nc.Publish(subj, b)
}

// peerRelay opens the receiver of req.Link, answers once it is live, then
// takes one priming message and req.N timed ones.
func peerRelay(ctx context.Context, nc *nats.Conn, m *nats.Msg, req peerReq) {
	tr := natsrelay.New(nc, natsrelay.Options{Config: relay.Config{Window: req.Window}})
	defer tr.Close()
	r, err := tr.OpenReceiver(ctx, req.Link)
	if err != nil {
		respond(m, err)
		return
	}
	defer r.Close()
	respond(m, nil)
	var rows, bytes0 uint64
	var cpu0 time.Duration
	var at int64
	for i := 0; i <= req.N; i++ {
		msg, err := r.Recv(ctx)
		at = time.Now().UnixNano()
		if err != nil {
			report(nc, req.Ack, peerReport{Kind: "error", I: i, Err: err.Error()})
			return
		}
		if msg.Record != nil {
			if i > 0 {
				rows += uint64(msg.Record.NumRows())
			}
			msg.Record.Release()
		}
		if i == 0 {
			cpu0, bytes0 = bench.ProcessCPU(), r.Stats().Bytes
		}
		if i == 0 || req.Each {
			report(nc, req.Ack, peerReport{Kind: "arrived", I: i, AtNs: at})
		}
	}
	report(nc, req.Ack, peerReport{Kind: "done", I: req.N, AtNs: at, Batches: uint64(req.N), Rows: rows,
		Bytes: r.Stats().Bytes - bytes0, CPUNs: int64(bench.ProcessCPU() - cpu0)})
}

// peerRaw subscribes to req.Subject and counts req.N messages of req.PerMsg
// bytes, cut at the max payload, reporting frame counts every req.Every
// frames on req.Credit.
func peerRaw(ctx context.Context, nc *nats.Conn, m *nats.Msg, req peerReq) {
	total := uint64(req.PerMsg) * uint64(req.N)
	var got, frames uint64
	msgs := 0
	var cpu0 atomic.Int64 // set before the reply, read by the callback
	done := make(chan struct{})
	var cb [8]byte
	sub, err := nc.Subscribe(req.Subject, func(msg *nats.Msg) {
		// One subscription's callbacks run one at a time: no locking.
		got += uint64(len(msg.Data))
		frames++
		if req.Every > 0 && frames%uint64(req.Every) == 0 {
			binary.BigEndian.PutUint64(cb[:], frames)
			_ = nc.Publish(req.Credit, cb[:])
		}
		if req.Each && got >= uint64(msgs+1)*uint64(req.PerMsg) {
			report(nc, req.Ack, peerReport{Kind: "arrived", I: msgs, AtNs: time.Now().UnixNano()})
			msgs++
		}
		if got == total {
			report(nc, req.Ack, peerReport{Kind: "done", I: req.N, AtNs: time.Now().UnixNano(), Batches: uint64(req.N),
				Bytes: got, CPUNs: int64(bench.ProcessCPU()) - cpu0.Load()})
			close(done)
		}
	})
	if err == nil {
		err = sub.SetPendingLimits(-1, -1)
	}
	if err == nil {
		err = nc.FlushTimeout(10 * time.Second)
	}
	if err != nil {
		respond(m, err)
		return
	}
	defer func() { _ = sub.Unsubscribe() }()
	cpu0.Store(int64(bench.ProcessCPU()))
	respond(m, nil)
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// peer is the parent's handle on a running peer process.
type peer struct {
	nc      *nats.Conn
	control string
	cmd     *exec.Cmd
	stdin   io.Closer
	stderr  *tailBuffer
	exited  chan struct{}
	waitErr error
	seq     atomic.Uint64
}

// startPeer starts the peer process o.Peer makes and waits until it listens.
func startPeer(ctx context.Context, o *Options, nc *nats.Conn, url string) (*peer, error) {
	p := &peer{nc: nc, control: fmt.Sprintf("bench.peer.%d.%d", time.Now().UnixNano(), linkSeq.Add(1)), exited: make(chan struct{})}
	ready := make(chan struct{}, 1)
	rs, err := nc.Subscribe(p.control+".ready", func(*nats.Msg) {
		select {
		case ready <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return nil, err
	}
	defer func() { _ = rs.Unsubscribe() }()
	if err := nc.Flush(); err != nil {
		return nil, err
	}
	p.cmd = o.Peer(url, p.control)
	if p.cmd.Stderr == nil {
		p.stderr = &tailBuffer{max: 4096}
		p.cmd.Stderr = p.stderr
	}
	w, err := p.cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPeer, err)
	}
	p.stdin = w
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: start %s: %v", ErrPeer, p.cmd.Path, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case <-ready:
		return p, nil
	case <-p.exited:
		return nil, p.failure("exited before it was ready")
	case <-t.C:
		p.stop()
		return nil, fmt.Errorf("%w: not ready within 30s", ErrPeer)
	case <-ctx.Done():
		p.stop()
		return nil, ctx.Err()
	}
}

// failure describes a peer that exited, with the tail of its stderr.
func (p *peer) failure(what string) error {
	msg := ""
	if p.stderr != nil {
		msg = strings.TrimSpace(p.stderr.String())
	}
	if msg != "" {
		msg = ": " + msg
	}
	return fmt.Errorf("%w %s: %v%s", ErrPeer, what, p.waitErr, msg)
}

// stop asks the peer to quit, closes its stdin and kills it if it lingers.
func (p *peer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	b, _ := json.Marshal(peerReq{Op: "quit"})
	_, _ = p.nc.RequestWithContext(ctx, p.control+".cmd", b)
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// session is one measurement's report stream from the peer.
type session struct {
	p       *peer
	ack     string
	sub     *nats.Subscription
	reports chan peerReport
}

func (p *peer) session(capacity int) (*session, error) {
	s := &session{p: p, ack: fmt.Sprintf("%s.ack.%d", p.control, p.seq.Add(1)), reports: make(chan peerReport, capacity)}
	var err error
	s.sub, err = p.nc.Subscribe(s.ack, func(m *nats.Msg) {
		var r peerReport
		if json.Unmarshal(m.Data, &r) != nil {
			r = peerReport{Kind: "error", Err: "unreadable report"}
		}
		s.reports <- r
	})
	if err != nil {
		return nil, err
	}
	if err := s.sub.SetPendingLimits(-1, -1); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *session) close() { _ = s.sub.Unsubscribe() }

// request sends req and waits until the peer's receiving end is live.
func (s *session) request(ctx context.Context, req peerReq) error {
	req.Ack = s.ack
	if err := s.p.nc.FlushWithContext(ctx); err != nil { // the ack subscription first
		return err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	m, err := s.p.nc.RequestWithContext(ctx, s.p.control+".cmd", b)
	if err != nil {
		return s.p.explain(fmt.Errorf("%w: %s request: %w", ErrPeer, req.Op, err))
	}
	if len(m.Data) != 0 {
		return fmt.Errorf("%w: %s", ErrPeer, m.Data)
	}
	return nil
}

// explain prefers the peer's own exit over a timeout it caused.
func (p *peer) explain(err error) error {
	select {
	case <-p.exited:
		return p.failure("exited")
	default:
		return err
	}
}

// next waits for the next report, which must be of kind want (and index i
// for arrivals).
func (s *session) next(ctx context.Context, want string, i int) (peerReport, error) {
	select {
	case r := <-s.reports:
		if r.Kind == "error" {
			return r, fmt.Errorf("%w: message %d: %s", ErrPeer, r.I, r.Err)
		}
		if r.Kind != want || (want == "arrived" && r.I != i) {
			return r, fmt.Errorf("%w: report %s/%d where %s/%d was due", ErrPeer, r.Kind, r.I, want, i)
		}
		return r, nil
	case <-s.p.exited:
		return peerReport{}, s.p.failure("exited")
	case <-ctx.Done():
		return peerReport{}, fmt.Errorf("%w: waiting for %s %d: %w", ErrPeer, want, i, ctx.Err())
	}
}

// PeerThroughput is a throughput measurement across processes, with what the
// peer says arrived.
type PeerThroughput struct {
	Throughput
	Got peerReport
}

// relayThroughputPeer sends n copies of rec from a (this process) to a
// receiver in the peer, timed from the first send to the peer's last
// receive, after one priming message.
func relayThroughputPeer(ctx context.Context, p *peer, a relay.Transport, rec arrow.Record, n, window int) (PeerThroughput, error) {
	s, err := p.session(4)
	if err != nil {
		return PeerThroughput{}, err
	}
	defer s.close()
	l := nextLink()
	if err := s.request(ctx, peerReq{Op: "relay", Link: l, Window: window, N: n}); err != nil {
		return PeerThroughput{}, err
	}
	snd, err := a.OpenSender(ctx, l)
	if err != nil {
		return PeerThroughput{}, err
	}
	defer snd.Close()
	if err := snd.SendData(ctx, 0, rec); err != nil {
		return PeerThroughput{}, err
	}
	if _, err := s.next(ctx, "arrived", 0); err != nil {
		return PeerThroughput{}, err
	}
	// The bytes sent once: a resend (an ack timed out on a busy machine)
	// reaches the peer's subscription but not its count of bytes.
	firstSent := func() uint64 { st := snd.Stats(); return st.Bytes - st.ResentBytes }
	before := firstSent()
	cpu0, start := bench.ProcessCPU(), time.Now()
	for i := 1; i <= n; i++ {
		if err := snd.SendData(ctx, uint64(i), rec); err != nil {
			return PeerThroughput{}, p.explain(err)
		}
	}
	done, err := s.next(ctx, "done", n)
	if err != nil {
		return PeerThroughput{}, err
	}
	t := Throughput{Batches: n, Bytes: firstSent() - before, Elapsed: time.Duration(done.AtNs - start.UnixNano()),
		CPU: bench.ProcessCPU() - cpu0 + time.Duration(done.CPUNs)}
	return PeerThroughput{Throughput: t, Got: done}, nil
}

// rawThroughputPeer publishes n messages of perMsg bytes to a subscriber in
// the peer, keeping at most window messages in flight as the relay does: the
// peer reports its frame count every window/2 messages, as the relay's
// receiver grants credit.
func rawThroughputPeer(ctx context.Context, p *peer, pub *nats.Conn, perMsg, n, window int) (PeerThroughput, error) {
	s, err := p.session(4)
	if err != nil {
		return PeerThroughput{}, err
	}
	defer s.close()
	maxp := int(pub.MaxPayload())
	chunks := (perMsg + maxp - 1) / maxp
	window = max(1, window)
	var acked atomic.Uint64
	moved := make(chan struct{}, 1)
	credit := s.ack + ".credit"
	cs, err := subscribeCredit(p.nc, credit, &acked, moved)
	if err != nil {
		return PeerThroughput{}, err
	}
	defer func() { _ = cs.Unsubscribe() }()
	subj := fmt.Sprintf("bench.raw.%d", linkSeq.Add(1))
	req := peerReq{Op: "raw", Subject: subj, Credit: credit, N: n, PerMsg: perMsg, Every: max(1, window/2) * chunks}
	if err := s.request(ctx, req); err != nil {
		return PeerThroughput{}, err
	}
	payload := patterned(perMsg)
	inFlight := uint64(window * chunks)
	cpu0, start := bench.ProcessCPU(), time.Now()
	sent := uint64(0)
	for i := 0; i < n; i++ {
		for sent >= inFlight && acked.Load() < sent-inFlight+uint64(chunks) {
			select {
			case <-moved:
			case <-p.exited:
				return PeerThroughput{}, p.failure("exited")
			case <-ctx.Done():
				return PeerThroughput{}, fmt.Errorf("raw publish across processes: %d of %d frames acknowledged: %w", acked.Load(), sent, ctx.Err())
			}
		}
		for off := 0; off < perMsg; off += maxp {
			if err := pub.Publish(subj, payload[off:min(off+maxp, perMsg)]); err != nil {
				return PeerThroughput{}, err
			}
			sent++
		}
	}
	if err := pub.FlushWithContext(ctx); err != nil {
		return PeerThroughput{}, err
	}
	done, err := s.next(ctx, "done", n)
	if err != nil {
		return PeerThroughput{}, err
	}
	t := Throughput{Batches: n, Bytes: done.Bytes, Elapsed: time.Duration(done.AtNs - start.UnixNano()),
		CPU: bench.ProcessCPU() - cpu0 + time.Duration(done.CPUNs)}
	return PeerThroughput{Throughput: t, Got: done}, nil
}

// relayLatencyPeer sends rec k+1 times, one at a time, to a receiver in the
// peer and returns the one-hop times of the last k (the first waits for the
// first credit).
func relayLatencyPeer(ctx context.Context, p *peer, a relay.Transport, rec arrow.Record, k, window int) ([]time.Duration, error) {
	s, err := p.session(k + 4)
	if err != nil {
		return nil, err
	}
	defer s.close()
	l := nextLink()
	if err := s.request(ctx, peerReq{Op: "relay", Link: l, Window: window, N: k, Each: true}); err != nil {
		return nil, err
	}
	snd, err := a.OpenSender(ctx, l)
	if err != nil {
		return nil, err
	}
	defer snd.Close()
	out := make([]time.Duration, 0, k)
	for i := 0; i <= k; i++ {
		start := time.Now().UnixNano()
		if err := snd.SendData(ctx, uint64(i), rec); err != nil {
			return nil, p.explain(err)
		}
		r, err := s.next(ctx, "arrived", i)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out = append(out, time.Duration(r.AtNs-start))
		}
	}
	if _, err := s.next(ctx, "done", k); err != nil {
		return nil, err
	}
	return out, nil
}

// rawLatencyPeer publishes a perMsg-byte message k times, one at a time, and
// returns each time until the peer saw all of it.
func rawLatencyPeer(ctx context.Context, p *peer, pub *nats.Conn, perMsg, k int) ([]time.Duration, error) {
	s, err := p.session(k + 4)
	if err != nil {
		return nil, err
	}
	defer s.close()
	subj := fmt.Sprintf("bench.rawlat.%d", linkSeq.Add(1))
	if err := s.request(ctx, peerReq{Op: "raw", Subject: subj, N: k, PerMsg: perMsg, Each: true}); err != nil {
		return nil, err
	}
	maxp := int(pub.MaxPayload())
	payload := make([]byte, perMsg)
	out := make([]time.Duration, 0, k)
	for i := 0; i < k; i++ {
		start := time.Now().UnixNano()
		for off := 0; off < perMsg; off += maxp {
			if err := pub.Publish(subj, payload[off:min(off+maxp, perMsg)]); err != nil {
				return nil, err
			}
		}
		r, err := s.next(ctx, "arrived", i)
		if err != nil {
			return nil, err
		}
		out = append(out, time.Duration(r.AtNs-start))
	}
	if _, err := s.next(ctx, "done", k); err != nil {
		return nil, err
	}
	return out, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
