package dataflow

import (
	"math"
	"slices"
	"time"
)

// LinkState is what the sending end of a channel to another worker knows of
// its network link, from its receiver's acknowledgements (the NATS relay's
// meters): an operator that shapes what it emits to the link (a source-side
// data adaptation, Jellyfish 7.3) reads it per batch.
type LinkState struct {
	// BandwidthBps is the acks' harmonic mean over the last second and
	// LastBps the latest ack's sample alone, in bytes per second; 0 before
	// the first ack.
	BandwidthBps, LastBps float64
	// SRTT is the messages' smoothed round trip (transfer included).
	SRTT time.Duration
	// TransferBps and LastTransferBps are the same bandwidth with the
	// link's base round trip (BaseRTT, that of a message without payload)
	// taken out of each sample: the link's rate, whatever the messages'
	// size; 0 where the sender does not measure it.
	TransferBps, LastTransferBps float64
	BaseRTT                      time.Duration
	// Acks counts the acknowledged data messages, LastAck is when the
	// latest ack came (the zero time: none): every message Acks counts
	// had reached the receiver by then.
	Acks    uint64
	LastAck time.Time
	// AckTimes are the latest ack events, oldest first (AckedAt).
	AckTimes []AckTime
	// UnackedBytes are data bytes on the wire whose ack has not come
	// back: what a batch emitted now queues behind.
	UnackedBytes int64
	// OldestSent is when the oldest of them got the link (the zero
	// time: none): what is left of them to cross is what the link has
	// not carried since.
	OldestSent time.Time
	// OverdueBps bounds the bandwidth now by the oldest data message on
	// the wire still without its ack (relay.LinkStats.OverdueBps): a link
	// that just fell shows here before its first slow ack; 0: none.
	OverdueBps float64
	// Bytes and Batches are what the link carried so far (frame headers
	// and progress included), so a reader can tell its payload from the
	// framing.
	Bytes, Batches uint64
	// Samples are the link's latest bandwidth samples, oldest first (the
	// transfer rate's where the sender measures it): the distribution
	// LinkBandwidth.Risk reads.
	Samples []float64
	// Residence are the receiver's latest measures of how long its
	// batches stayed there until their results (ResidenceMeter), oldest
	// first; empty where the transport does not carry them.
	Residence []time.Duration
}

// AckTime is one ack event on a link: Acked data messages acknowledged in
// all once it came, at At.
type AckTime struct {
	Acked uint64
	At    time.Time
}

// AckedAt is when the link's data message number n (counting from 1) was
// acknowledged: the first ack event kept that covered it (exact, unless
// it is the oldest kept, which an event no longer kept may have beaten:
// then a bound, it was acknowledged by then), else LastAck; the zero time
// while Acks has not reached it.
func (s LinkState) AckedAt(n uint64) time.Time {
	if n == 0 || s.Acks < n {
		return time.Time{}
	}
	for _, t := range s.AckTimes {
		if t.Acked >= n {
			return t.At
		}
	}
	return s.LastAck
}

// ResidenceTail is how long the receiver keeps a batch with probability p:
// the longest of its latest EvidenceSamples(p) measures (of n exchangeable
// measures and the next, the next is the longest with probability
// 1/(n+1)); 0 with none.
func (s LinkState) ResidenceTail(p float64) time.Duration {
	n := len(s.Residence)
	var long time.Duration
	for _, d := range s.Residence[n-min(n, EvidenceSamples(p)):] {
		long = max(long, d)
	}
	return long
}

// LinkStater is a Sender that knows its link's state (relay's senders).
type LinkStater interface {
	LinkState() LinkState
}

// OutputLinks are the link states of the channels output carries to other
// workers whose senders report one; empty when every receiver runs on this
// worker (no link) or the transport reports nothing.
func (c *Context) OutputLinks(output int) []LinkStater {
	if output < 0 || output >= len(c.in.outs) {
		return nil
	}
	var out []LinkStater
	for _, oe := range c.in.outs[output] {
		for _, oc := range oe.chans {
			if oc.local != nil {
				continue
			}
			if ls, ok := oc.s.(LinkStater); ok {
				out = append(out, ls)
			}
		}
	}
	return out
}

// LinkBandwidth is the one view every decision takes of a link's measured
// bandwidth, in bytes per second (0 before the first ack): Mean is the
// acks' harmonic mean over the last second, Latest the latest message's
// sample alone and Recent the larger of the latest two; each is the
// link's transfer rate (its base round trip taken out of every sample)
// where the sender measures it, else the acks' plain one. The relay's
// meter (relay.LinkStats), the live estimates (control.LinkEstimate) and
// an operator's link (LinkState) all give it (their Bandwidth method), and
// the rules of which number a decision takes are its methods: PlanBps for a
// plan, BatchBps for a batch.
type LinkBandwidth struct {
	Mean, Latest, Recent float64
	// Samples are the latest samples, oldest first (Risk).
	Samples []float64
	// Overdue bounds the bandwidth now by a message still without its ack
	// (LinkState.OverdueBps); 0: none.
	Overdue float64
}

// NewLinkBandwidth is the view of a link whose acks measured ack and, when
// the sender knows its base round trip (xfer.Mean > 0), whose transfers
// measured xfer: the transfer rate stands for the acks' where it is
// measured, as the acks' plain estimate falls with the messages' size (a
// small frame's round trip is mostly the base one).
func NewLinkBandwidth(ack, xfer LinkBandwidth) LinkBandwidth {
	if xfer.Mean > 0 {
		return xfer
	}
	return ack
}

// DefaultAttainment is the share of a LATENCY query's rows that must meet
// the bound when the query names no PERCENTILE: the probability every
// decision on a latency-bound stream holds its prediction with.
const DefaultAttainment = 0.98

// Attainment is the probability a query's LATENCY bound asks for: its
// PERCENTILE (0-100; 0: none given) as a share, DefaultAttainment when it
// names none or one outside (0, 100).
func Attainment(percentile float64) float64 {
	if percentile <= 0 || percentile >= 100 {
		return DefaultAttainment
	}
	return percentile / 100
}

// EvidenceSamples is how many samples a tail held with probability p rests
// on: of n exchangeable samples and the next one, each is the smallest with
// probability 1/(n+1), so the next is at least the smallest of the n with
// probability n/(n+1), which is p from n = p/(1-p) on (49 for 0.98).
func EvidenceSamples(p float64) int {
	if p <= 0 {
		return 1
	}
	if p >= 1 {
		return math.MaxInt32
	}
	return max(1, int(math.Ceil(p/(1-p)-1e-9)))
}

// Current is the bandwidth the link gives now by the latest evidence: its
// latest sample (BatchBps without samples), or the overdue bound when that
// is lower (a fall shows there before its first slow ack); 0 with neither.
func (b LinkBandwidth) Current() float64 {
	cur := b.BatchBps()
	if n := len(b.Samples); n > 0 {
		cur = b.Samples[n-1]
	}
	if b.Overdue > 0 && (cur <= 0 || b.Overdue < cur) {
		cur = b.Overdue
	}
	return cur
}

// LinkRisk is what a message that needs a bandwidth risks on a link
// (LinkBandwidth.Risk).
type LinkRisk struct {
	// Expected is the expected cost of the next message: (the costs of
	// the falls seen + 1) / (N + 1).
	Expected float64
	// N is how many transitions it rests on: the kept samples on the
	// current one's side of the bandwidth, each followed by another.
	N int
	// Fell: one of them was followed by a sample under the bandwidth.
	Fell bool
	// Above: the link gives the bandwidth now (Current).
	Above bool
	// Loss is what the next message costs if the link falls under it: the
	// dearest of the falls seen, and of the unseen one (at least 1).
	Loss float64
	// Falling: a message on the wire is overdue by more than any fall the
	// samples show (LinkBandwidth.FallingUnseen), which counts as one more
	// fall; nothing tells how deep it goes, so nothing may be bet on it.
	Falling bool
}

// Holds reports whether the risk is within 1-p on the evidence p asks for:
// with fewer than EvidenceSamples(p) transitions the next sample is the
// least of them all with probability over 1-p, whatever they were, so a
// link a message has not yet seen carry its need often enough holds
// nothing, be it new or back from a long slow spell.
func (r LinkRisk) Holds(p float64) bool {
	return r.N >= EvidenceSamples(p) && r.Expected <= 1-p
}

// Risk is the expected cost of the link's next message when it needs bps,
// given what the link gives now (Current), read from how its samples
// moved: of the N kept samples on the current one's side of bps, each whose successor fell under it costs
// cost(fall) (at least 1, a fall under what a message needs being a
// miss by the need's own definition; nil: 1 each), fall being the samples
// from that successor on while they stay under bps (how deep the fall went
// and for how many messages), and the next sample, not seen yet, what a
// one-message fall to the least sample kept under bps costs (at least 1: the
// exchangeability rule's +1 of EvidenceSamples, the next being the least
// of them all with probability 1/(N+1)).
// With every fall costing 1 it bounds the probability that the next
// sample falls under bps, (u+1)/(n+1) of u falls. A link that fades now
// and then is one whose good samples are followed by a fall that often,
// however long ago the last fall was (the latest samples alone forget it
// between fades and send large frames into the next one); a link that
// wanders is one whose falls under bps are rare. A cost above 1 is a fall
// whose damage outlasts the message (the messages queued behind a large
// one that met a fade), which the probability alone prices as one.
func (b LinkBandwidth) Risk(bps float64, cost func(fall []float64) float64) LinkRisk {
	cur := b.Current()
	if cur <= 0 {
		return LinkRisk{Expected: 1}
	}
	r := LinkRisk{Above: cur >= bps, Loss: 1, Falling: b.FallingUnseen()}
	sum := 0.0
	if r.Falling {
		r.N, r.Fell, sum = 1, true, 1
	}
	for i := 0; i+1 < len(b.Samples); i++ {
		if (b.Samples[i] >= bps) != r.Above {
			continue
		}
		r.N++
		if b.Samples[i+1] < bps {
			r.Fell = true
			c := 1.0
			if cost != nil {
				end := i + 1
				for end < len(b.Samples) && b.Samples[end] < bps {
					end++
				}
				c = max(1, cost(b.Samples[i+1:end]))
			}
			sum += c
			r.Loss = max(r.Loss, c)
		}
	}
	// The next sample is the least of all with probability 1/(N+1): a
	// fall at least as deep as the deepest seen, for one message.
	unseen := 1.0
	if least := slices.Min(append([]float64{bps}, b.Samples...)); cost != nil && least < bps {
		unseen = max(1, cost([]float64{least}))
	}
	r.Loss = max(r.Loss, unseen)
	r.Expected = (sum + unseen) / float64(r.N+1)
	return r
}

// FallingUnseen reports whether the link is falling now by more than it
// ever fell in its kept samples: the oldest message on the wire is overdue
// (Overdue under the latest sample), so its own sample will be at most
// Overdue, a fall of at least Overdue/latest, and no kept sample followed
// its predecessor down by that ratio. Risk reads the link's next sample from
// how its samples moved; this transition is one they never made, so they
// cannot say where it ends. Read as the latest sample, the link held a
// large side on 55 transitions without a fall while the large frame ahead
// of it took twice its time into the first fade of a trace, and a second
// large frame queued behind it (bench slo --simulate, queued sender:
// fades-602 and fades-2407 missed more than static-smallest; with this
// they pass, and fades-2507 misses 2.04% where it missed 2.24%). A walk's
// drift makes falls of every small ratio, so its overdue messages are
// seen ones (no walk of the 504 traces judged failed for it).
func (b LinkBandwidth) FallingUnseen() bool {
	n := len(b.Samples)
	if b.Overdue <= 0 || n == 0 || b.Overdue >= b.Samples[n-1] {
		return false
	}
	ratio := b.Overdue / b.Samples[n-1]
	for i := 1; i < n; i++ {
		if b.Samples[i] <= ratio*b.Samples[i-1] {
			return false
		}
	}
	return true
}

// FallUnderWay reads a fall under way that the link makes rarely: the
// oldest message on the wire is overdue (Overdue under the latest sample,
// a fall of at least Overdue/latest), and of the kept transitions at most
// 1-p fell that far (at least one: none is FallingUnseen's). A fall the
// link makes on more than 1-p of its transitions is in every Risk read at
// p already; a rarer one is not, so while it lasts the next message is read
// from the rare falls alone. under(bps) is the share of them whose end,
// as a ratio of the sample before it and scaled to the latest sample, is
// under bps. ok is false when no such fall is under way.
func (b LinkBandwidth) FallUnderWay(p float64) (under func(bps float64) float64, ok bool) {
	n := len(b.Samples)
	if b.Overdue <= 0 || n < 2 || b.Overdue >= b.Samples[n-1] {
		return nil, false
	}
	latest := b.Samples[n-1]
	ratio := b.Overdue / latest
	var ends []float64
	for i := 1; i < n; i++ {
		if b.Samples[i-1] > 0 && b.Samples[i] <= ratio*b.Samples[i-1] {
			ends = append(ends, latest*b.Samples[i]/b.Samples[i-1])
		}
	}
	if len(ends) == 0 || float64(len(ends)) > (1-p)*float64(n-1) {
		return nil, false
	}
	return func(bps float64) float64 {
		k := 0
		for _, e := range ends {
			if e < bps {
				k++
			}
		}
		return float64(k) / float64(len(ends))
	}, true
}

// LinkDropRatio is how far under the mean the latest sample must fall for
// a batch to take it as the link's bandwidth (BatchBps): the steps of a
// changing link are 2x and more, a busy host's jitter less.
const LinkDropRatio = 0.6

// PlanBps is the bandwidth a plan takes, which must hold up when the link
// drops: the mean, or the latest two samples when both are lower, so a
// drop counts at its second slow ack and a rise only once it held. (The
// latest sample alone made the engine re-plan on single slow acks of a
// loaded machine, and hold the smaller frames for the policy's step-up
// wait.)
func (b LinkBandwidth) PlanBps() float64 {
	if b.Recent > 0 && b.Recent < b.Mean {
		return b.Recent
	}
	return b.Mean
}

// BatchBps is the bandwidth one batch takes: the mean, or the latest
// sample when it is under LinkDropRatio of it, so that a drop counts at
// the next ack (the next batch meets it; a plan costs a cut-over) and a
// rise once it has held. One slow ack on a busy host (a scheduling delay
// is in its round trip) is no drop: taken as one, it sent frames of a link
// that carried them small, each a few points less accurate.
func (b LinkBandwidth) BatchBps() float64 {
	if b.Latest > 0 && (b.Mean <= 0 || b.Latest < LinkDropRatio*b.Mean) {
		return b.Latest
	}
	return b.Mean
}

// Bandwidth is the link's bandwidth view.
func (s LinkState) Bandwidth() LinkBandwidth {
	b := NewLinkBandwidth(LinkBandwidth{Mean: s.BandwidthBps, Latest: s.LastBps, Samples: s.Samples},
		LinkBandwidth{Mean: s.TransferBps, Latest: s.LastTransferBps, Samples: s.Samples})
	b.Overdue = s.OverdueBps
	return b
}
