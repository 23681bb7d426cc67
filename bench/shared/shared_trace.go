package shared

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/runtime/inference/sched"
)

// sinkEvent is one batch of real-time rows the sink wrote: when, and their
// end-to-end latency (from their ingest).
type sinkEvent struct {
	at   time.Time
	d    time.Duration
	rows int64
}

// rtPath is where one real-time sink batch's latency went, in the order
// its rows met it: pre (ingest to the scheduler: source, relay, batcher),
// wait (for the scheduler's grant), wake (the caller's goroutine picking
// the grant up), ort (the model run), post (the model's end to the sink);
// beOverlap is the time a best-effort part was in ONNX Runtime between the
// batch's arrival at the scheduler and its run's end.
type rtPath struct {
	lat, pre, wait, wake, ort, post, beOverlap time.Duration
	rows                                       int64
}

// rtBreakdown is the real-time latency taken apart, from the scheduler's
// trace matched to the sink's latencies, and how the best-effort parts ran
// against their predictions.
type rtBreakdown struct {
	paths     []rtPath
	unmatched int64 // sink rows no traced part explains
	// Best-effort parts: how many, how many ran in ONNX Runtime while a
	// real-time batch waited or ran, actual over predicted time.
	beParts, beIntoRT int
	beRatio, rtRatio  []float64
	// beLate: parts sized to end before a predicted real-time arrival
	// that ended after it; beSlack the predicted end's distance before
	// that arrival.
	beDue, beLate int
	beSlack       []float64
	// wrongDue: predicted real-time arrivals the actual one missed by more
	// than a millisecond (either way), over those checked.
	dueErr []float64
}

// breakdown matches each sink batch to the real-time part that ran its rows
// (the earliest to arrive at the scheduler after the rows' ingest, and to
// end before the sink wrote them) and measures the best-effort parts.
func breakdown(parts []sched.Part, sinks []sinkEvent, rtQuery string) rtBreakdown {
	var b rtBreakdown
	var rt, be []sched.Part
	for _, p := range parts {
		if p.Query == rtQuery {
			rt = append(rt, p)
		} else {
			be = append(be, p)
		}
	}
	sort.Slice(rt, func(i, j int) bool { return rt[i].Arrival.Before(rt[j].Arrival) })
	for _, p := range rt {
		if pred := p.PredictedEnd.Sub(p.Granted); pred > 0 {
			b.rtRatio = append(b.rtRatio, float64(p.Ended.Sub(p.Started))/float64(pred))
		}
	}
	sort.Slice(be, func(i, j int) bool { return be[i].Started.Before(be[j].Started) })
	for _, s := range sinks {
		ingest := s.at.Add(-s.d)
		i := sort.Search(len(rt), func(i int) bool { return !rt[i].Arrival.Before(ingest) })
		if i == len(rt) || rt[i].Ended.After(s.at.Add(time.Millisecond)) {
			b.unmatched += s.rows
			continue
		}
		p := rt[i]
		b.paths = append(b.paths, rtPath{lat: s.d, pre: p.Arrival.Sub(ingest), wait: p.Granted.Sub(p.Arrival),
			wake: p.Started.Sub(p.Granted), ort: p.Ended.Sub(p.Started), post: s.at.Sub(p.Ended),
			beOverlap: overlap(be, p.Arrival, p.Ended), rows: s.rows})
	}
	for _, p := range be {
		b.beParts++
		if pred := p.PredictedEnd.Sub(p.Granted); pred > 0 {
			b.beRatio = append(b.beRatio, float64(p.Ended.Sub(p.Started))/float64(pred))
		}
		if intoRT(rt, p) {
			b.beIntoRT++
		}
		if !p.Due.IsZero() {
			b.beDue++
			b.beSlack = append(b.beSlack, msOf(p.Due.Sub(p.PredictedEnd)))
			// The real-time batch it was sized for: the first to arrive
			// after the part was granted.
			i := sort.Search(len(rt), func(i int) bool { return !rt[i].Arrival.Before(p.Granted) })
			if i < len(rt) {
				b.dueErr = append(b.dueErr, msOf(rt[i].Arrival.Sub(p.Due)))
				if p.Ended.After(rt[i].Arrival) {
					b.beLate++
				}
			}
		}
	}
	return b
}

// overlap is the time best-effort parts (by start) spent in their model
// runs within [from, to].
func overlap(be []sched.Part, from, to time.Time) time.Duration {
	var d time.Duration
	for _, p := range be {
		if !p.Started.Before(to) {
			break
		}
		if s, e := later(p.Started, from), earlier(p.Ended, to); e.After(s) {
			d += e.Sub(s)
		}
	}
	return d
}

// intoRT: a real-time batch waited for or ran beside the best-effort part.
func intoRT(rt []sched.Part, p sched.Part) bool {
	i := sort.Search(len(rt), func(i int) bool { return !rt[i].Ended.Before(p.Started) })
	return i < len(rt) && rt[i].Arrival.Before(p.Ended)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// p99 is the 99th percentile over real-time rows of one part of the path,
// ms.
func (b rtBreakdown) p99(f func(rtPath) time.Duration) float64 {
	var xs []float64
	for _, p := range b.paths {
		for range p.rows {
			xs = append(xs, msOf(f(p)))
		}
	}
	return bench.Percentile(xs, 0.99)
}

// beside is how many real-time batches a best-effort part was in ONNX
// Runtime beside.
func (b rtBreakdown) beside() int {
	n := 0
	for _, p := range b.paths {
		if p.beOverlap > 0 {
			n++
		}
	}
	return n
}

// print writes the breakdown: each part of the path at p50 and p99 over
// real-time rows, the slowest rows in full, and the best-effort parts.
func (b rtBreakdown) print(w io.Writer, label string) {
	if len(b.paths) == 0 {
		return
	}
	comp := func(f func(rtPath) time.Duration) string {
		var xs []float64
		for _, p := range b.paths {
			for range p.rows {
				xs = append(xs, msOf(f(p)))
			}
		}
		return fmt.Sprintf("%.1f/%.1f", bench.Percentile(xs, 0.5), bench.Percentile(xs, 0.99))
	}
	withBE := b.beside()
	fmt.Fprintf(w, "bench shared: %s rt path ms p50/p99: pre %s, wait %s, wake %s, ort %s, post %s, best effort in ORT %s (%d of %d batches; %d rows unmatched)\n",
		label, comp(func(p rtPath) time.Duration { return p.pre }), comp(func(p rtPath) time.Duration { return p.wait }),
		comp(func(p rtPath) time.Duration { return p.wake }), comp(func(p rtPath) time.Duration { return p.ort }),
		comp(func(p rtPath) time.Duration { return p.post }), comp(func(p rtPath) time.Duration { return p.beOverlap }),
		withBE, len(b.paths), b.unmatched)
	worst := slices.Clone(b.paths)
	sort.Slice(worst, func(i, j int) bool { return worst[i].lat > worst[j].lat })
	var ws []string
	for _, p := range worst[:min(3, len(worst))] {
		ws = append(ws, fmt.Sprintf("%.1f = %.1f+%.1f+%.1f+%.1f+%.1f (be %.1f)", msOf(p.lat), msOf(p.pre), msOf(p.wait), msOf(p.wake), msOf(p.ort), msOf(p.post), msOf(p.beOverlap)))
	}
	if len(b.rtRatio) > 0 {
		fmt.Fprintf(w, "bench shared: %s real-time runs actual/predicted time p50 %.2f p90 %.2f p99 %.2f\n", label,
			bench.Percentile(b.rtRatio, 0.5), bench.Percentile(b.rtRatio, 0.9), bench.Percentile(b.rtRatio, 0.99))
	}
	fmt.Fprintf(w, "bench shared: %s slowest rt batches ms = pre+wait+wake+ort+post: %s\n", label, strings.Join(ws, "; "))
	if b.beParts > 0 {
		fmt.Fprintf(w, "bench shared: %s best-effort parts: %d, %d beside a real-time batch; actual/predicted time p50 %.2f p90 %.2f p99 %.2f; %d sized to a predicted arrival, %d ended after the real one (slack p50 %.1f ms, arrival error p50 %.1f p99 %.1f ms)\n",
			label, b.beParts, b.beIntoRT, bench.Percentile(b.beRatio, 0.5), bench.Percentile(b.beRatio, 0.9), bench.Percentile(b.beRatio, 0.99),
			b.beDue, b.beLate, bench.Percentile(b.beSlack, 0.5), bench.Percentile(b.dueErr, 0.5), bench.Percentile(b.dueErr, 0.99))
	}
}
