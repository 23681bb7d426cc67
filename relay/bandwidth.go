package relay

import (
	"github.com/tierflow/tierflow/dataflow"
	"math"
	"sync"
	"time"
)

// BandwidthWindow is how far back a link's bandwidth estimate looks:
// Jellyfish (section 6) takes the harmonic mean of a client's per-request
// bandwidth over the past second.
const BandwidthWindow = time.Second

// bandwidth estimates a link's bandwidth from its receiver's
// acknowledgements: each data message gives one sample, its bytes over the
// time from when it got the link to when its ack came back (its round
// trip: transfer, propagation and the receiver's decode). The estimate is
// the harmonic mean of the samples of the last BandwidthWindow (the
// harmonic mean follows the slow samples, which is what a deadline has to
// plan for); with none that recent, the last estimate stands. SRTT is the
// messages' round trip smoothed as TCP does (1/8 per sample).
type bandwidth struct {
	mu      sync.Mutex
	samples []bwSample
	last    float64
	srtt    time.Duration
	acks    uint64
	latest  float64
	prev    float64 // the sample before latest
	// The link's own rate, the round trip taken out: base is the least
	// round trip of the window's progress messages (a header, no payload
	// to carry; BBR's min RTT), and each data sample also gives n over
	// its round trip less base (at least a quarter of it).
	bases      []rttSample
	base       time.Duration
	xfer       []bwSample
	xferLast   float64
	xferLatest float64
	xferPrev   float64 // the transfer sample before xferLatest
	// tail are the last TailSamples samples of the link's view (the
	// transfer rate once a base round trip is known, else the acks'
	// plain one), oldest first from tailAt: the distribution a latency
	// bound is read from (dataflow.LinkBandwidth.Risk), kept by count,
	// not by time, as a bound at p needs p/(1-p) samples however fast
	// they come.
	tail   [TailSamples]float64
	tailN  int // samples in tail (at most TailSamples)
	tailAt int // the oldest's index once tail is full
}

// TailSamples is how many of a link's latest bandwidth samples it keeps
// for its distribution: a fall that comes once in p/(1-p) samples (1 in
// 99 at 0.99, dataflow.EvidenceSamples) must show several times to tell
// its rate (dataflow.LinkBandwidth.Risk), so about five such spans
// (half a minute at 15 messages a second).
const TailSamples = 512

type rttSample struct {
	at time.Time
	rt time.Duration
}

type bwSample struct {
	at  time.Time
	bps float64
}

// add takes one acknowledged message: n bytes, on the link from sent,
// acknowledged at acked.
func (b *bandwidth) add(n int, sent, acked time.Time) {
	rt := acked.Sub(sent)
	if rt <= 0 || n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.acks++
	if b.srtt == 0 {
		b.srtt = rt
	} else {
		b.srtt += (rt - b.srtt) / 8
	}
	b.prev, b.latest = b.latest, float64(n)/rt.Seconds()
	b.samples = append(b.samples, bwSample{at: acked, bps: b.latest})
	view := b.latest
	if b.base > 0 {
		b.xferPrev, b.xferLatest = b.xferLatest, float64(n)/max(rt-b.base, rt/4).Seconds()
		b.xfer = append(b.xfer, bwSample{at: acked, bps: b.xferLatest})
		view = b.xferLatest
	}
	if b.tailN < TailSamples {
		b.tail[b.tailN] = view
		b.tailN++
	} else {
		b.tail[b.tailAt] = view
		b.tailAt = (b.tailAt + 1) % TailSamples
	}
	b.trim(acked)
}

// tailSamples appends the kept samples, oldest first, to dst.
func (b *bandwidth) tailSamples(dst []float64) []float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tailN < TailSamples {
		return append(dst, b.tail[:b.tailN]...)
	}
	dst = append(dst, b.tail[b.tailAt:]...)
	return append(dst, b.tail[:b.tailAt]...)
}

// addBase takes the round trip of a message without payload (progress).
func (b *bandwidth) addBase(sent, acked time.Time) {
	rt := acked.Sub(sent)
	if rt <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bases = append(b.bases, rttSample{at: acked, rt: rt})
	b.trim(acked)
}

// trim drops the samples older than the window; b.mu is held. Each drop
// reslices past the old samples rather than copying the rest down: a link
// acknowledged thousands of times a second keeps thousands of samples, and
// a copy per ack was most of an ack's cost (#30). append moves the live
// samples to a new array once the old one's tail is full, so the dropped
// ones cost their memory until then and nothing per ack.
func (b *bandwidth) trim(now time.Time) {
	b.samples = dropOlder(b.samples, now, func(s bwSample) time.Time { return s.at })
	b.xfer = dropOlder(b.xfer, now, func(s bwSample) time.Time { return s.at })
	b.bases = dropOlder(b.bases, now, func(s rttSample) time.Time { return s.at })
	for k, x := range b.bases {
		if k == 0 || x.rt < b.base {
			b.base = x.rt
		}
	}
}

// dropOlder is ss without its leading samples older than BandwidthWindow
// at now (ss is oldest first); empty, it starts again at the front of its
// array.
func dropOlder[T any](ss []T, now time.Time, at func(T) time.Time) []T {
	i := 0
	for i < len(ss) && now.Sub(at(ss[i])) > BandwidthWindow {
		i++
	}
	if i == len(ss) {
		return ss[:0]
	}
	return ss[i:]
}

// transfer is the link's rate with the round trip taken out (harmonic
// mean over the window, the latest sample and the larger of the last two;
// 0 before a progress message's ack gave a base) and that base round trip.
func (b *bandwidth) transfer(now time.Time) (bps, latest, recent float64, base time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.trim(now)
	if len(b.xfer) > 0 {
		b.xferLast = harmonicMean(b.xfer)
	}
	return b.xferLast, b.xferLatest, lastTwo(b.xferPrev, b.xferLatest), b.base
}

// estimate is the harmonic mean over the window ending now (bytes per
// second; 0 before the first ack), the latest sample, the larger of the
// last two (a drop that held for two acks) and the smoothed round trip.
func (b *bandwidth) estimate(now time.Time) (bps, latest, recent float64, srtt time.Duration, acks uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.trim(now)
	if len(b.samples) > 0 {
		b.last = harmonicMean(b.samples)
	}
	return b.last, b.latest, lastTwo(b.prev, b.latest), b.srtt, b.acks
}

// harmonicMean is the samples' harmonic mean rate (there is at least one).
func harmonicMean(ss []bwSample) float64 {
	var inv float64
	for _, s := range ss {
		inv += 1 / s.bps
	}
	return float64(len(ss)) / inv
}

// lastTwo is the larger of the last two samples (prev 0: only latest):
// a rate that held for two acks, not one slow ack's.
func lastTwo(prev, latest float64) float64 {
	if prev > 0 {
		return max(prev, latest)
	}
	return latest
}

// Ack records the receiver's acknowledgement of a data message of n bytes
// that went onto the link at sent and was acknowledged at acked (sender
// ends of backends whose receivers acknowledge).
func (m *Meter) Ack(n int, sent, acked time.Time) { m.bw.add(n, sent, acked) }

// AckedMessages counts n data messages that one cumulative ack covered,
// received at at (its last one's sample goes to Ack): LinkStats.Acks
// counts the messages acknowledged, not the samples, and LastAck is when
// the latest ack came.
func (m *Meter) AckedMessages(n int, at time.Time) {
	m.lastAck.Store(at.UnixNano())
	m.ackTimes.add(dataflow.AckTime{Acked: m.ackedMsgs.Add(uint64(n)), At: at}, AckTimesKept)
}

// AckEmpty records the acknowledgement of a message without payload (a
// progress message) sent at sent: its round trip is the link's base, what
// a data message's takes beyond carrying its bytes.
func (m *Meter) AckEmpty(sent, acked time.Time) { m.bw.addBase(sent, acked) }

// Shaped records a shaped link's bandwidth cap as of its last send (bytes
// per second): EXPLAIN ANALYZE sets the ack estimate beside it.
func (m *Meter) Shaped(bps float64) { m.shapedBps.Store(math.Float64bits(bps)) }
