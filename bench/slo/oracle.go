package slo

import (
	"time"

	"github.com/tierflow/tierflow/relay"
)

// The oracle: what a policy that knew the trace could have done. It replays
// each client's frames over its link as the trace shapes it (the relay's
// own TransferEnd, frames queued in order behind the ones before), a frame
// taking its variant's bytes on the wire and its variant's compute, and
// counts the frames that reach their result within the SLO. Two bounds come
// of it, per trace: the best static choice in hindsight (the most accurate
// variant whose frames miss at most MaxMissRate), and the per-second best
// choice in hindsight (every second of every client on the most accurate
// variant whose frames of that second are all in time, given the queue the
// seconds before left; the smallest where none is), an upper bound no
// policy that chooses once a second can beat, and one a policy that
// chooses per frame beats only by splitting a second.

// MaxMissRate is the share of frames a policy may miss and still count as
// keeping the SLO (the bar: 2%).
const MaxMissRate = 0.02

// oracleVariant is a variant as the oracle weighs it.
type oracleVariant struct {
	Name      string
	Side      int     // its input's side
	Bytes     float64 // on the wire per frame
	ComputeMs float64 // a frame's compute alone
	Accuracy  float64 // percent, on the frames answered in time
}

// oracleRun is one way to send a trace's frames: its miss rate and its
// accuracy over the frames in time.
type oracleRun struct {
	Name        string  `json:"name"`
	SLOMissRate float64 `json:"slo_miss_rate"`
	Accuracy    float64 `json:"accuracy"`
}

// oracleLink replays frames over one client's link.
type oracleLink struct {
	sh      relay.Shaper
	start   time.Time
	rate    float64
	slo     time.Duration
	baseRTT time.Duration
	free    time.Time // when the link is free of the frames sent so far
}

// send puts frame k (captured at start + k/rate) at variant v on the link
// and says whether its result is in time.
func (l *oracleLink) send(k int, v oracleVariant) bool {
	at := l.start.Add(time.Duration(float64(k) / l.rate * float64(time.Second)))
	from := at
	if l.free.After(from) {
		from = l.free
	}
	l.free = relay.TransferEnd(l.sh, from, int(v.Bytes))
	done := l.free.Add(l.baseRTT/2 + time.Duration(v.ComputeMs*float64(time.Millisecond)))
	return done.Sub(at) <= l.slo
}

// oracleBounds are a trace's bounds for clients clients, each offset i/N of
// a period into it (as the bench shapes them), over frames frames each.
func oracleBounds(tr *relay.Trace, clients, frames int, rate float64, slo time.Duration, vs []oracleVariant) (static []oracleRun, best, perSecond oracleRun) {
	start := time.Unix(0, 0)
	link := func(i int) *oracleLink {
		return &oracleLink{sh: relay.TraceShaper{Trace: tr, Start: start, Offset: time.Duration(i) * tr.Period / time.Duration(clients)},
			start: start, rate: rate, slo: slo, baseRTT: time.Millisecond}
	}
	total := clients * frames
	for _, v := range vs {
		var inTime int
		for i := 0; i < clients; i++ {
			l := link(i)
			for k := 0; k < frames; k++ {
				if l.send(k, v) {
					inTime++
				}
			}
		}
		static = append(static, oracleRun{Name: "static " + v.Name, SLOMissRate: round4(1 - float64(inTime)/float64(total)), Accuracy: v.Accuracy})
	}
	best = static[0] // the smallest, where none keeps the SLO
	for _, s := range static[1:] {
		if s.SLOMissRate <= MaxMissRate && (best.SLOMissRate > MaxMissRate || s.Accuracy > best.Accuracy) {
			best = s
		}
	}
	if best.SLOMissRate > MaxMissRate {
		for _, s := range static {
			if s.SLOMissRate < best.SLOMissRate {
				best = s
			}
		}
	}
	best.Name = "best static in hindsight (" + best.Name[len("static "):] + ")"
	// Per second: the most accurate variant whose frames of the second
	// are all in time behind the queue the earlier seconds left.
	perSec := int(rate + 0.5)
	var inTime int
	var correct float64
	for i := 0; i < clients; i++ {
		l := link(i)
		for k0 := 0; k0 < frames; k0 += perSec {
			n := min(perSec, frames-k0)
			pick, pickIn := -1, -1
			var pickFree time.Time
			for j := len(vs) - 1; j >= 0; j-- {
				try := *l
				in := 0
				for k := k0; k < k0+n; k++ {
					if try.send(k, vs[j]) {
						in++
					}
				}
				if in > pickIn || (in == pickIn && in < n) {
					// the most in time; among ties the smaller (less queue)
					pick, pickIn, pickFree = j, in, try.free
				}
				if in == n {
					break
				}
			}
			l.free = pickFree
			inTime += pickIn
			correct += float64(pickIn) * vs[pick].Accuracy
		}
	}
	perSecond = oracleRun{Name: "per-second best in hindsight", SLOMissRate: round4(1 - float64(inTime)/float64(total))}
	if inTime > 0 {
		perSecond.Accuracy = round2(correct / float64(inTime))
	}
	return static, best, perSecond
}
