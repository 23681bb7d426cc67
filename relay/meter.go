package relay

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierflow/tierflow/dataflow"
)

// Meter counts what crosses one link end. Backends update it as they go;
// Snapshot may be called at any time from any goroutine.
type Meter struct {
	link      LinkID
	dir       Direction
	batches   atomic.Uint64
	rows      atomic.Uint64
	progress  atomic.Uint64
	bytes     atomic.Uint64
	frames    atomic.Uint64
	control   atomic.Uint64
	stalls    atomic.Uint64
	stalledNs atomic.Int64
	buffered  atomic.Int64
	bufBytes  atomic.Int64
	maxBuf    atomic.Int64
	maxBufB   atomic.Int64
	closed    atomic.Bool
	bw        bandwidth                // sender: acknowledged messages (bandwidth.go)
	shapedBps atomic.Uint64            // sender: a shaped link's current cap (float64 bits)
	unacked   atomic.Int64             // sender: data bytes on the wire, not acknowledged
	ackedMsgs atomic.Uint64            // sender: data messages acknowledged (cumulative acks)
	lastAck   atomic.Int64             // sender: when the latest ack came, Unix ns
	ackTimes  latest[dataflow.AckTime] // sender: the latest acks' counts and times
	resent    atomic.Uint64            // sender: messages sent again
	resentB   atomic.Uint64            // sender: their wire bytes (in bytes too)
	dups      atomic.Uint64            // receiver: messages that arrived again, dropped
	gaps      atomic.Uint64            // receiver: messages found missing, asked for again
	resid     latest[time.Duration]    // sender: the receiver's residence measures
	oldestAt  atomic.Int64             // sender: when the oldest unacked data message got the link (Unix ns; 0: none)
	oldestN   atomic.Int64             // sender: its bytes
}

// latest keeps a meter's latest values, oldest first, up to a count fixed
// at first use (keep): the receiver's residence measures, the ack events.
type latest[T any] struct {
	mu   sync.Mutex
	ring []T
	at   int // the oldest's index once the ring is full
}

func (r *latest[T]) add(v T, keep int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ring) < keep {
		r.ring = append(r.ring, v)
		return
	}
	r.ring[r.at] = v
	r.at = (r.at + 1) % len(r.ring)
}

// snapshot is a copy, oldest first; nil when empty.
func (r *latest[T]) snapshot() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ring) == 0 {
		return nil
	}
	return append(append(make([]T, 0, len(r.ring)), r.ring[r.at:]...), r.ring[:r.at]...)
}

// AckTimesKept is how many ack events a sender keeps (LinkStats.AckTimes,
// so that a reader can tell when a given message was acknowledged,
// dataflow.LinkState.AckedAt): a reader that looks once a batch finds the
// ack of each batch since its last look while fewer than this many acks
// came between.
const AckTimesKept = 64

// Residence takes the receiver's measure d of how long its worker kept
// the link's batches (an ack's, relay.ResidenceReporter).
func (m *Meter) Residence(d time.Duration) { m.resid.add(d, TailSamples) }

// Unacked sets the sender's data bytes on the wire whose ack has not come
// back.
func (m *Meter) Unacked(n int64) { m.unacked.Store(n) }

// Oldest notes the sender's oldest data message on the wire without its
// ack: when it got the link and its bytes (the zero time: none).
func (m *Meter) Oldest(start time.Time, n int) {
	if start.IsZero() {
		m.oldestAt.Store(0)
		return
	}
	m.oldestN.Store(int64(n))
	m.oldestAt.Store(start.UnixNano())
}

// Resent counts one message sent again (a gap, a reconnect, an ack
// timeout) and the n wire bytes it took again, which Wire counted too.
func (m *Meter) Resent(n uint64) {
	m.resent.Add(1)
	m.resentB.Add(n)
}

// WireBytes is the wire bytes counted so far (Wire).
func (m *Meter) WireBytes() uint64 { return m.bytes.Load() }

// Duplicate counts one message that arrived again and was dropped.
func (m *Meter) Duplicate() { m.dups.Add(1) }

// Gap counts one missing message the receiver asked for again.
func (m *Meter) Gap() { m.gaps.Add(1) }

// NewMeter returns a zeroed meter for one end of link.
func NewMeter(link LinkID, dir Direction) *Meter { return &Meter{link: link, dir: dir} }

// Batch counts one data message of rows rows.
func (m *Meter) Batch(rows int64) {
	m.batches.Add(1)
	m.rows.Add(uint64(rows))
}

// ProgressMsg counts one progress message.
func (m *Meter) ProgressMsg() { m.progress.Add(1) }

// Wire counts one wire frame of n bytes carrying data or progress.
func (m *Meter) Wire(n int) {
	m.frames.Add(1)
	m.bytes.Add(uint64(n))
}

// ControlBytes counts a control frame of n bytes.
func (m *Meter) ControlBytes(n int) { m.control.Add(uint64(n)) }

// Stall counts one wait for credit that lasted d.
func (m *Meter) Stall(d time.Duration) {
	m.stalls.Add(1)
	m.stalledNs.Add(int64(d))
}

// Enqueue notes a message of n bytes buffered at the receiver.
func (m *Meter) Enqueue(n int64) {
	b := m.buffered.Add(1)
	bb := m.bufBytes.Add(n)
	raiseTo(&m.maxBuf, b)
	raiseTo(&m.maxBufB, bb)
}

// Dequeue notes a buffered message of n bytes handed out or dropped.
func (m *Meter) Dequeue(n int64) {
	m.buffered.Add(-1)
	m.bufBytes.Add(-n)
}

// MarkClosed records that the end was closed.
func (m *Meter) MarkClosed() { m.closed.Store(true) }

func raiseTo(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// Snapshot returns the current counts.
func (m *Meter) Snapshot() LinkStats { return m.SnapshotAt(time.Now()) }

// SnapshotAt is Snapshot read at now: the estimates' windows end there
// and the overdue bound ages to it (a simulation that acks on a clock of
// its own reads its meter on that clock).
func (m *Meter) SnapshotAt(now time.Time) LinkStats {
	bps, latest, recent, srtt, acks := m.bw.estimate(now)
	xfer, xferLatest, xferRecent, base := m.bw.transfer(now)
	var overdue float64
	if at := m.oldestAt.Load(); at > 0 {
		// Unacknowledged after age: had the link carried its n bytes at
		// bw or faster, the ack would be back by n/bw plus the base round
		// trip, so it carries less than n/(age - base) now.
		if age := now.Sub(time.Unix(0, at)) - base; age > 0 {
			overdue = float64(m.oldestN.Load()) / age.Seconds()
		}
	}
	return LinkStats{
		TransferBps:       xfer,
		LastTransferBps:   xferLatest,
		RecentTransferBps: xferRecent,
		BaseRTT:           base,
		AckBandwidthBps:   bps,
		Samples:           m.bw.tailSamples(nil),
		Residence:         m.resid.snapshot(),
		LastAckBps:        latest,
		RecentAckBps:      recent,
		ShapedBps:         math.Float64frombits(m.shapedBps.Load()),
		UnackedBytes:      m.unacked.Load(),
		OverdueBps:        overdue,
		SRTT:              srtt,
		Acks:              max(acks, m.ackedMsgs.Load()),
		LastAck:           unixTime(m.lastAck.Load()),
		AckTimes:          m.ackTimes.snapshot(),
		OldestSent:        unixTime(m.oldestAt.Load()),
		Link:              m.link,
		Direction:         m.dir,
		Batches:           m.batches.Load(),
		Rows:              m.rows.Load(),
		Progress:          m.progress.Load(),
		Bytes:             m.bytes.Load(),
		Frames:            m.frames.Load(),
		Control:           m.control.Load(),
		Stalls:            m.stalls.Load(),
		Stalled:           time.Duration(m.stalledNs.Load()),
		Buffered:          m.buffered.Load(),
		MaxBuffered:       m.maxBuf.Load(),
		MaxBufferedBytes:  m.maxBufB.Load(),
		Closed:            m.closed.Load(),
		Resent:            m.resent.Load(),
		ResentBytes:       m.resentB.Load(),
		Duplicates:        m.dups.Load(),
		Gaps:              m.gaps.Load(),
	}
}

// unixTime is ns as a time, the zero time for 0.
func unixTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
