package sched

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// DeepQuery is the co-location policy of DeepQuery (MMSys '19, 5.2):
// real-time batches first, earliest deadline first; a best-effort batch
// runs only on an idle device, in the gap before the next real-time batch is
// due, with as many of its rows as the profile says end before then (the
// largest that fits), and waits when not even one row fits. The next
// real-time batch is predicted from the query's arrivals so far (periodic
// frames); a query whose batch is StalePeriods periods late has paused and
// no longer holds best-effort work back.
//
// One departure from the paper, for CPUs: a GPU job cannot be preempted, so
// there a real-time job waits for the best-effort one running; ONNX
// Runtime's CPU thread pool takes a second run at once, so here a real-time
// batch never waits: when a best-effort part overruns its prediction, the
// real-time batch shares the cores with its rest instead of queueing
// behind all of it. One more, for a CPU other processes load: the margin
// before a real-time batch grows with the overlaps observed (Learn; on this
// machine it halved the share of parts that ran into a real-time batch).
// A part may also be sized by a quantile of the recent runs rather than
// their mean (Quantile, off by default).
type DeepQuery struct {
	// Sizes are the batch sizes each session is measured at when it opens.
	Sizes []int
	// Margin, plus MarginShare of the real-time period, plus Jitters times
	// the arrivals' jitter, is kept free before a predicted real-time batch:
	// the prediction's error on a shared CPU.
	Margin      time.Duration
	MarginShare float64
	Jitters     float64
	// Spread: a best-effort part must fit its budget even when it runs
	// this many deviations slower than the corrected profile says. 0 and
	// Jitters 0 are the paper's rule (mean estimates); on a CPU other
	// processes load heavily, raising them trades best-effort throughput
	// for fewer overruns into real-time batches (bench shared measured
	// both on this machine: docs/benchmarks.md).
	Spread float64
	// StalePeriods: a real-time query this many periods late has paused.
	StalePeriods float64
	// ColdShare: before a real-time query's period is known (two
	// batches), best-effort parts are kept within this share of its
	// LATENCY, so its first frames do not wait out a whole best-effort
	// batch.
	ColdShare float64
	// Quantile: a best-effort part is sized by this quantile of its
	// session's recent runs (Profiles.Conservative) rather than by the
	// mean correction, so that it ends before the real-time batch in that
	// share of runs (0: the mean, the paper's rule, the default: on this
	// machine the 75th percentile cut best-effort throughput to a fifth of
	// running alone without a steadier real-time tail; docs/benchmarks.md).
	Quantile float64
	// Learn turns on the learned margin: when a real-time batch arrives
	// while a best-effort part still runs, the time they shared the device
	// (the overrun into the real-time batch, whether the part ran long or
	// the batch came early) moves the margin kept free before the next
	// real-time batch halfway up to it; each part that ends in time
	// shrinks it by LearnDecay. It is at most LearnShare of the real-time
	// period: on a machine others load, overlaps of whole periods happen
	// that no margin would prevent, and one must not stop best-effort
	// work for good.
	Learn      bool
	LearnDecay float64
	LearnShare float64
	// PostHold: after a real-time batch's model run ends, best-effort work
	// waits until its rows reach their sink on this worker
	// (Scheduler.Delivered), for at most this share of the query's period
	// (of its LATENCY before the period is known). On a CPU the model's
	// end is not the batch's: its rows still need the cores through the
	// operators after the model, the relay and the sink, and a best-effort
	// part started at once takes both (bench shared's trace: the time
	// from the model run's end to the sink was the real-time tail's larger
	// half beside best effort, at p99 40 ms against 8-13 ms alone). 0: the
	// paper's rule, best effort starts when the model is free.
	PostHold float64

	mu      sync.Mutex
	learned time.Duration
	overrun Overruns
}

// Overruns count the best-effort parts that ran and those a real-time batch
// arrived into, with the longest time the two shared the device: where a
// real-time batch's tail comes from when the parts are mis-sized.
type Overruns struct {
	Parts, Overran int
	Worst          time.Duration
}

// Overruns so far.
func (p *DeepQuery) Overruns() Overruns {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.overrun
}

// Observe counts a best-effort part, and learns the margin from one that a
// real-time batch arrived into (Learn).
func (p *DeepQuery) Observe(o Outcome) {
	if o.Priority == RealTime {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.overrun.Parts++
	if over := o.Ended.Sub(o.RealTimeArrived); !o.RealTimeArrived.IsZero() && over > 0 {
		p.overrun.Overran++
		p.overrun.Worst = max(p.overrun.Worst, over)
		if p.Learn && over > p.learned {
			p.learned += (over - p.learned) / 2
		}
		return
	}
	p.learned = time.Duration(float64(p.learned) * p.LearnDecay)
}

// Learned is the margin learned from overruns so far.
func (p *DeepQuery) Learned() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.learned
}

// NewDeepQuery returns the policy with its defaults.
func NewDeepQuery() *DeepQuery {
	return &DeepQuery{Sizes: []int{1, 2, 4, 8, 16, 32, 64}, Margin: time.Millisecond, MarginShare: 0.1, Jitters: 0, Spread: 0, StalePeriods: 3, ColdShare: 0.25,
		Quantile: 0, Learn: true, LearnDecay: 0.9, LearnShare: 0.25, PostHold: 0.1}
}

func (p *DeepQuery) Name() string        { return DeepQueryName }
func (p *DeepQuery) Slots() int          { return 0 }
func (p *DeepQuery) ProfileSizes() []int { return p.Sizes }
func (p *DeepQuery) stale() float64      { return max(p.StalePeriods, 1) }
func (p *DeepQuery) margin(per time.Duration) time.Duration {
	return p.Margin + time.Duration(p.MarginShare*float64(per)) + min(p.Learned(), time.Duration(p.LearnShare*float64(per)))
}

// Budget is the time best-effort work may take from now before a real-time
// batch is due (math.MaxInt64 when none is), the query it is due for, and
// when that query counts as paused.
func (p *DeepQuery) Budget(v *View) (time.Duration, string, time.Time) {
	b, who, wake, _ := p.budget(v)
	return b, who, wake
}

// budget is Budget and the predicted arrival it keeps the margin before
// (zero: none predicted).
func (p *DeepQuery) budget(v *View) (time.Duration, string, time.Time, time.Time) {
	budget, who := time.Duration(math.MaxInt64), ""
	var wake, due time.Time
	for _, t := range v.Tenants {
		if t.Priority != RealTime {
			continue
		}
		pr, ok := v.Arrivals.Predict(t.Query)
		if !ok {
			if b := time.Duration(p.ColdShare * float64(t.Latency)); b > 0 && b < budget {
				budget, who, wake, due = b, t.Query, time.Time{}, time.Time{}
			}
			continue
		}
		stale := pr.Last.Add(time.Duration(p.stale() * float64(pr.Period)))
		if !v.Now.Before(stale) {
			continue
		}
		if b := pr.Next.Sub(v.Now) - p.margin(pr.Period) - time.Duration(p.Jitters*float64(pr.Jitter)); b < budget {
			budget, who, wake, due = b, t.Query, stale, pr.Next
		}
	}
	return budget, who, wake, due
}

func (p *DeepQuery) Next(v *View) Decision {
	var rt, be *Request
	for _, q := range v.Queues {
		r := q.Pending[0]
		if q.Priority == RealTime {
			if rt == nil || earlier(r, rt) {
				rt = r
			}
		} else if be == nil || r.seq < be.seq {
			be = r
		}
	}
	if rt != nil {
		return Decision{Run: rt}
	}
	if be == nil {
		return Decision{}
	}
	if len(v.Running) > 0 {
		// One batch at a time otherwise: the next decision comes when
		// the running one ends.
		return Decision{Why: fmt.Sprintf("best-effort %s waits: %s runs", be.Query, v.Running[0].Query)}
	}
	if q, until := p.held(v); !until.IsZero() {
		return Decision{Recheck: until, Why: fmt.Sprintf("best-effort %s waits: real-time %s's rows are on their way to its sink", be.Query, q)}
	}
	budget, who, wake, due := p.budget(v)
	if budget == time.Duration(math.MaxInt64) {
		return Decision{Run: be}
	}
	rows := 0
	if budget > 0 {
		budget = time.Duration(float64(budget) / v.Profiles.Conservative(be.Key, p.Quantile))
		rows = v.Profiles.Largest(be.Key, be.Rows, budget, p.Spread)
	}
	if rows < be.Rows && !be.Splittable {
		rows = 0 // it runs whole or not at all (DeepQuery's non-batching jobs)
	}
	if rows == 0 && wake.IsZero() {
		// Cold (no period known yet, so no moment to wait for): the
		// smallest part goes rather than none.
		rows = 1
		if !be.Splittable {
			rows = be.Rows
		}
	}
	if rows == 0 {
		return Decision{Recheck: wake, Why: fmt.Sprintf("best-effort %s waits: real-time %s is due in %s", be.Query, who, max(budget, 0).Round(time.Microsecond))}
	}
	return Decision{Run: be, Rows: rows, Due: due}
}

// held is the real-time query whose rows are between its model and its
// sink, and until when best-effort work waits for them (zero: none).
func (p *DeepQuery) held(v *View) (string, time.Time) {
	if p.PostHold <= 0 {
		return "", time.Time{}
	}
	var who string
	var until time.Time
	for _, t := range v.Tenants {
		ended, ok := v.InFlight[t.Query]
		if !ok || t.Priority != RealTime {
			continue
		}
		span := t.Latency
		if pr, ok := v.Arrivals.Predict(t.Query); ok {
			span = pr.Period
		}
		if u := ended.Add(time.Duration(p.PostHold * float64(span))); v.Now.Before(u) && u.After(until) {
			who, until = t.Query, u
		}
	}
	return who, until
}

// earlier orders real-time requests: earliest deadline, then arrival.
func earlier(a, b *Request) bool {
	switch {
	case a.Deadline.IsZero() != b.Deadline.IsZero():
		return !a.Deadline.IsZero()
	case !a.Deadline.Equal(b.Deadline):
		return a.Deadline.Before(b.Deadline)
	}
	return a.seq < b.seq
}

// ByName returns the policy named name (NaiveName, DeepQueryName, or a
// SneakPeek scheduler: MaxAccEDFName, LOEDFName, GroupedName,
// SneakPeekName).
func ByName(name string) (Policy, error) {
	switch name {
	case "", NaiveName:
		return Naive{}, nil
	case DeepQueryName:
		return NewDeepQuery(), nil
	}
	if p, ok := NewDataAware(name); ok {
		return p, nil
	}
	return nil, fmt.Errorf("%w: unknown scheduling policy %q (want %s, %s, %s, %s, %s or %s)", ErrPolicy, name,
		NaiveName, DeepQueryName, MaxAccEDFName, LOEDFName, GroupedName, SneakPeekName)
}
