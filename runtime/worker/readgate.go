package worker

import (
	"net"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/dataflow"
)

// readGate makes an owner's relay connection's reading a step of the
// owner's query: the NATS client's reader goroutine, between two reads of
// the socket, parses the frames it read, copies each into a message of
// its own and hands it to its link's subscription, and pays the garbage
// collector's assists for those allocations. That is work for the owner's
// query, as a source's parallel parse is (dataflow.Helper), and it was
// nobody's: on a worker of one processor a query flooding its links had
// its reader hold the processor for tens of milliseconds at a time,
// ungated, while another user's deployment request and frames waited to
// be read behind it (#25, traced: mallory's reader ran 285 ms of a
// worker's 2.7 s, and held the only processor 210 ms at once while alice's
// part build waited to start). Gated, the reader waits at the owner's turn
// when the owner is ahead, the frames wait in the socket (the relay's
// credit window bounds how many), and its time counts against the owner.
//
// The gate charges the owner's most recently joined part's share: one
// owner's parts on a worker share the connection, and which of them a
// frame is for is known only after it is parsed. Without a part (an idle
// connection kept for the owner's next query) reads are not gated.
type readGate struct {
	mu     sync.Mutex
	shares []*dataflow.CPUShare
}

// join adds a part's share (nil: the worker shares no CPU).
func (g *readGate) join(s *dataflow.CPUShare) {
	if s == nil {
		return
	}
	g.mu.Lock()
	g.shares = append(g.shares, s)
	g.mu.Unlock()
}

// leave removes a part's share, once its part no longer reads.
func (g *readGate) leave(s *dataflow.CPUShare) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, o := range g.shares {
		if o == s {
			g.shares = append(g.shares[:i], g.shares[i+1:]...)
			return
		}
	}
}

// begin starts the reader's step for what it just read (nil: none).
func (g *readGate) begin() *dataflow.HelperStep {
	g.mu.Lock()
	var s *dataflow.CPUShare
	if n := len(g.shares); n > 0 {
		s = g.shares[n-1]
	}
	g.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Helper().Begin()
}

// gatedDialer dials as the worker's connection does (inner) and gates
// what is read from the connection it made.
type gatedDialer struct {
	inner nats.CustomDialer
	gate  *readGate
}

func (d *gatedDialer) Dial(network, address string) (net.Conn, error) {
	c, err := d.inner.Dial(network, address)
	if err != nil {
		return nil, err
	}
	return &gatedConn{Conn: c, gate: d.gate}, nil
}

// SkipTLSHandshake keeps an inner dialer's choice (nats.CustomDialer).
func (d *gatedDialer) SkipTLSHandshake() bool {
	s, ok := d.inner.(interface{ SkipTLSHandshake() bool })
	return ok && s.SkipTLSHandshake()
}

// gatedConn is a connection whose reader's work between two reads is a
// step (readGate). Only the NATS client's one reader goroutine reads it,
// and only it ends the step (a step's goroutine may be locked to its
// thread: dataflow.CPUShare's begin); a reader that stops without reading
// again (a protocol error: the connection is then broken, and dropped)
// leaves its step to its share, which its part leaves.
type gatedConn struct {
	net.Conn
	gate *readGate
	step *dataflow.HelperStep
}

func (c *gatedConn) Read(p []byte) (int, error) {
	// The step ends as the reader comes back for more: the read is a
	// wait, and a step blocked in it would look busy to the gate.
	c.step.End()
	c.step = nil
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.step = c.gate.begin()
	}
	return n, err
}
