package control

import (
	"sort"
	"sync"
	"time"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/relay"
)

// Alpha weighs a new sample in the estimates' exponentially weighted moving
// averages: 0.3 follows a change within a few reports (a report every half
// second) without jumping at every uneven one.
const Alpha = 0.3

// MinInterval is the shortest time between two samples: workers report one
// by one, and a rate over a few milliseconds is noise.
const MinInterval = 400 * time.Millisecond

// Estimates are a query's live, smoothed measurements, what a re-planner
// compares with the plan's assumptions.
type Estimates struct {
	// At is when they were last updated; Samples how many samples went in.
	At        time.Time          `json:"at"`
	Samples   int                `json:"samples"`
	Operators []OperatorEstimate `json:"operators"`
	Links     []LinkEstimate     `json:"links,omitempty"`
}

// OperatorEstimate is one operator over all its instances.
type OperatorEstimate struct {
	OperatorID int    `json:"operator_id"`
	Operator   string `json:"operator"`
	// InputRate is rows in per second (a source: rows out); Selectivity rows
	// out per row in.
	InputRate   float64 `json:"input_rate"`
	Selectivity float64 `json:"selectivity"`
	// BatchRows is rows per arriving batch (a source: per emitted batch).
	BatchRows float64 `json:"batch_rows"`
	// ModelMsPerBatch is the mean time of a callback that produced output,
	// for a model call: its inference per batch (0 for other operators).
	ModelMsPerBatch float64 `json:"model_ms_per_batch"`
	// QueueLength is the batches waiting in the instances' inboxes, summed.
	QueueLength float64 `json:"queue_length"`
	// Busy is the share of wall time the instances spent in callbacks,
	// averaged over instances (1: always busy).
	Busy float64 `json:"busy"`
}

// LinkEstimate is one relay link between two workers (sender side).
type LinkEstimate struct {
	Link relay.LinkID `json:"link"`
	// From and To are the workers at its ends (when known).
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// BandwidthBps is the bytes per second the link carried; RTTMs the
	// round trip between its two workers through the NATS server the relay
	// uses (each worker's measured round trip to the server, added).
	BandwidthBps float64 `json:"bandwidth_bps"`
	RTTMs        float64 `json:"rtt_ms"`
	// Stalled is the share of wall time its sender waited to send (for
	// credit, or for a shaped link's bucket): near 1, the link does not
	// keep up with what the plan puts on it.
	Stalled float64 `json:"stalled"`
	// AckBandwidthBps is the link's bandwidth as its receiver's acks
	// measure it (bytes per second: each data message's bytes over its
	// round trip, harmonic mean over the last second, Jellyfish 6): what
	// it can carry now, not what it was given. SRTTMs is the messages'
	// smoothed round trip. Both 0 before the first ack.
	AckBandwidthBps float64 `json:"ack_bandwidth_bps,omitempty"`
	SRTTMs          float64 `json:"srtt_ms,omitempty"`
	// RecentAckBps is the larger of the latest two messages' samples
	// (relay.LinkStats.RecentAckBps): a drop of the link shows in it at
	// its second slow ack, in the mean only as slow samples pile up.
	RecentAckBps float64 `json:"recent_ack_bps,omitempty"`
	// TransferBps and RecentTransferBps are the same with each message's
	// round trip less the link's base one (relay.LinkStats.TransferBps): a
	// link that carries small frames (the adapt step's per-batch sides)
	// is not read as slow for their round trips. 0 before the relay knew
	// the base.
	TransferBps       float64 `json:"transfer_bps,omitempty"`
	RecentTransferBps float64 `json:"recent_transfer_bps,omitempty"`
	// Samples are the link's latest bandwidth samples, oldest first
	// (relay.LinkStats.Samples): the distribution the latency-SLO policy
	// reads a link from (dataflow.LinkBandwidth.Risk).
	Samples []float64 `json:"samples,omitempty"`
	// ShapedBps is a shaped link's cap (`--link-trace`) at its last send:
	// the bandwidth the acks estimate, as the experiment set it.
	ShapedBps float64 `json:"shaped_bps,omitempty"`
}

// Endpoints names the workers at a link's ends; nil leaves them unnamed.
type Endpoints func(relay.LinkID) (from, to string)

// Live folds successive snapshots of a query's statistics into Estimates.
// Safe for concurrent use.
type Live struct {
	mu   sync.Mutex
	prev snapshot
	est  Estimates
	ops  map[int]*OperatorEstimate
	lnk  map[relay.LinkID]*LinkEstimate
	// carry is the stalled time (seconds) a link's meter reported beyond
	// the last sample's interval: a sender counts a wait when it ends, so
	// a 3 s wait for a slow link arrives at once; the share of each later
	// interval takes the rest, so the time is neither lost nor over 1.
	carry map[relay.LinkID]float64
}

type snapshot struct {
	at      time.Time
	ops     map[int]opTotals
	links   map[relay.LinkID]uint64
	stalled map[relay.LinkID]time.Duration
	acked   map[relay.LinkID]relay.LinkStats
}

type opTotals struct {
	name                                 string
	instances                            int
	rowsIn, rowsOut, batchesIn, batchOut int64
	busyNs                               int64
	lat                                  dataflow.Histogram
	queue                                int
	model                                bool
}

// NewLive starts a query's estimates.
func NewLive() *Live {
	return &Live{ops: map[int]*OperatorEstimate{}, lnk: map[relay.LinkID]*LinkEstimate{}, carry: map[relay.LinkID]float64{}}
}

// Observe takes the query's statistics as of now: every instance's counters
// (all workers), the links' meters (sender and receiver ends), and each
// worker's round trip to the NATS server. The first call only sets the
// baseline; calls closer than MinInterval to the last sample are ignored.
func (l *Live) Observe(now time.Time, ops []dataflow.InstanceStats, links []relay.LinkStats, rtt map[string]time.Duration, ends Endpoints) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.prev.at.IsZero() && now.Sub(l.prev.at) < MinInterval {
		// No new sample of the rates, but the acks' bandwidth is already a
		// mean over the last second: a link's sender that reports just
		// after another worker brings it fresh, and a link that stepped
		// down must show at once (the latency-SLO policy reads it at every
		// report), not up to MinInterval later.
		for _, s := range links {
			if e := l.lnk[s.Link]; e != nil && s.Direction == relay.Send && (s.Acks > 0 || s.ShapedBps > 0) {
				e.AckBandwidthBps, e.RecentAckBps, e.SRTTMs, e.ShapedBps = s.AckBandwidthBps, s.RecentAckBps, float64(s.SRTT)/float64(time.Millisecond), s.ShapedBps
				e.TransferBps, e.RecentTransferBps, e.Samples = s.TransferBps, s.RecentTransferBps, s.Samples
			}
		}
		return
	}
	cur := snapshot{at: now, ops: map[int]opTotals{}, links: map[relay.LinkID]uint64{}, stalled: map[relay.LinkID]time.Duration{}, acked: map[relay.LinkID]relay.LinkStats{}}
	for _, s := range ops {
		t := cur.ops[s.OperatorID]
		t.name = s.Operator
		t.instances++
		t.rowsIn += s.RowsIn
		t.rowsOut += s.RowsOut
		t.batchesIn += s.BatchesIn
		t.batchOut += s.BatchesOut
		t.busyNs += s.BusyNs
		t.lat.Add(s.BatchLatency)
		t.queue += s.QueueLength
		t.model = t.model || s.Attributes["variant"] != ""
		cur.ops[s.OperatorID] = t
	}
	for _, s := range links {
		if s.Direction == relay.Send {
			cur.links[s.Link] += s.Bytes
			cur.stalled[s.Link] += s.Stalled
			if s.Acks > 0 || s.ShapedBps > 0 {
				cur.acked[s.Link] = s
			}
		}
	}
	prev := l.prev
	l.prev = cur
	if prev.at.IsZero() {
		return
	}
	dt := now.Sub(prev.at).Seconds()
	l.est.Samples++
	l.est.At = now
	for id, c := range cur.ops {
		p := prev.ops[id]
		e := l.ops[id]
		first := e == nil
		if first {
			e = &OperatorEstimate{OperatorID: id, Operator: c.name}
			l.ops[id] = e
		}
		in, out := float64(c.rowsIn-p.rowsIn), float64(c.rowsOut-p.rowsOut)
		batches := float64(c.batchesIn - p.batchesIn)
		source := c.batchesIn == 0 && c.batchOut > 0
		if source {
			in, batches = out, float64(c.batchOut-p.batchOut)
		}
		smooth(&e.InputRate, in/dt, first)
		if in > 0 {
			smooth(&e.Selectivity, out/in, first || e.Selectivity == 0)
		}
		if batches > 0 {
			smooth(&e.BatchRows, in/batches, first || e.BatchRows == 0)
		}
		if c.model {
			if n := c.lat.Count - p.lat.Count; n > 0 {
				smooth(&e.ModelMsPerBatch, float64(c.lat.SumNs-p.lat.SumNs)/float64(n)/1e6, first || e.ModelMsPerBatch == 0)
			}
		}
		smooth(&e.QueueLength, float64(c.queue), first)
		smooth(&e.Busy, float64(c.busyNs-p.busyNs)/1e9/dt/float64(max(c.instances, 1)), first)
	}
	for id, b := range cur.links {
		e := l.lnk[id]
		first := e == nil
		if first {
			e = &LinkEstimate{Link: id}
			if ends != nil {
				e.From, e.To = ends(id)
			}
			l.lnk[id] = e
		}
		smooth(&e.BandwidthBps, float64(b-prev.links[id])/dt, first)
		stalled := l.carry[id] + (cur.stalled[id] - prev.stalled[id]).Seconds()
		l.carry[id] = max(0, stalled-dt)
		smooth(&e.Stalled, min(1, stalled/dt), first)
		if a, ok := cur.acked[id]; ok {
			// Already a mean over the last second: taken as it is.
			e.AckBandwidthBps, e.RecentAckBps = a.AckBandwidthBps, a.RecentAckBps
			e.TransferBps, e.RecentTransferBps, e.Samples = a.TransferBps, a.RecentTransferBps, a.Samples
			e.SRTTMs = float64(a.SRTT) / float64(time.Millisecond)
			e.ShapedBps = a.ShapedBps
		}
		if r1, ok1 := rtt[e.From]; ok1 {
			if r2, ok2 := rtt[e.To]; ok2 {
				smooth(&e.RTTMs, float64(r1+r2)/float64(time.Millisecond), first || e.RTTMs == 0)
			}
		}
	}
}

// smooth moves *v toward x by Alpha; the first sample is taken as it is.
func smooth(v *float64, x float64, first bool) {
	if first {
		*v = x
		return
	}
	*v += Alpha * (x - *v)
}

// Estimates is a copy of the current estimates, operators by id, links by
// link.
func (l *Live) Estimates() Estimates {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := Estimates{At: l.est.At, Samples: l.est.Samples}
	for _, e := range l.ops {
		out.Operators = append(out.Operators, *e)
	}
	sort.Slice(out.Operators, func(i, j int) bool { return out.Operators[i].OperatorID < out.Operators[j].OperatorID })
	for _, e := range l.lnk {
		out.Links = append(out.Links, *e)
	}
	sort.Slice(out.Links, func(i, j int) bool {
		a, b := out.Links[i].Link, out.Links[j].Link
		if a.Edge != b.Edge {
			return a.Edge < b.Edge
		}
		if a.Sender != b.Sender {
			return a.Sender < b.Sender
		}
		return a.Receiver < b.Receiver
	})
	return out
}

// Bandwidth is the link's bandwidth view (its acks' and transfers' mean
// and latest two samples), which every decision reads by its rules
// (dataflow.LinkBandwidth).
func (l LinkEstimate) Bandwidth() dataflow.LinkBandwidth {
	return dataflow.NewLinkBandwidth(dataflow.LinkBandwidth{Mean: l.AckBandwidthBps, Recent: l.RecentAckBps, Samples: l.Samples},
		dataflow.LinkBandwidth{Mean: l.TransferBps, Recent: l.RecentTransferBps, Samples: l.Samples})
}
