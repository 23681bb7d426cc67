package sched

import (
	"strings"
	"time"

	"github.com/tierflow/tierflow/operators/ml"
)

// Priority is a query's scheduling class (WITH (PRIORITY ...)).
type Priority int

const (
	// Default is a query without PRIORITY: scheduled as before the
	// classes existed (a policy may treat it as best effort).
	Default Priority = iota
	BestEffort
	RealTime
)

func (p Priority) String() string {
	switch p {
	case RealTime:
		return "REALTIME"
	case BestEffort:
		return "BEST_EFFORT"
	}
	return ""
}

// ParsePriority reads the binder's class name (lang.PriorityClass); anything
// else is Default.
func ParsePriority(s string) Priority {
	switch strings.ToUpper(s) {
	case "REALTIME":
		return RealTime
	case "BEST_EFFORT":
		return BestEffort
	}
	return Default
}

// Tenant is the query a bound session runs model calls for.
type Tenant struct {
	Query    string
	Priority Priority
	// Latency is the query's LATENCY bound (0: none): a request's deadline
	// is its arrival plus it.
	Latency time.Duration
	// Variants, when set, are the variants of the query's model a
	// data-aware policy may run a batch on instead of the bound one (the
	// bound session's key among them), each with its profiled accuracy
	// and per-class recall (SneakPeek 3.1).
	Variants []Variant
	// Evidence, when set, is a row's votes over the recall's classes (the
	// stream's SneakPeek estimator: kNN labels), read from the batch's
	// inputs before it queues.
	Evidence func(inputs []ml.Tensor, row int) []float64
}

// Variant is a model variant a data-aware tenant may run on.
type Variant struct {
	Name    string
	Key     string
	Session ml.Session
	// Accuracy (0..1) as profiled; Recall per class (0..1), nil when not
	// profiled (the policy then uses Accuracy).
	Accuracy float64
	Recall   []float64
}

// Request is one batch a query's model operator asked the scheduler to run:
// what a policy sees and decides on. Requests carry what a deadline- or
// utility-driven policy needs (issue 16 groups them by utility and picks a
// variant per group): the query, its class, when the batch arrived, by when
// its rows are due, and a utility its producer may set.
type Request struct {
	Query    string
	Priority Priority
	// Key names the shared session (variant, device) the batch runs on.
	Key string
	// Rows is what is left to run of the batch; Total its size.
	Rows, Total int
	// Arrival is when the batch reached the scheduler; Deadline is Arrival
	// plus the query's LATENCY (zero: none).
	Arrival, Deadline time.Time
	// Utility is the value of running the batch now (0: not given).
	Utility float64
	// Splittable batches may run in parts (Decision.Rows < Rows); a batch
	// whose tensors do not all lead with its rows runs whole.
	Splittable bool
	// Votes are each row's evidence (Tenant.Evidence; nil without).
	Votes [][]float64
	// Variant is the variant of Tenant.Variants the policy chose (-1: the
	// bound session); set when the request is granted.
	Variant int

	seq     uint64
	running bool
	grant   chan int
}

// Queue is one query's pending requests, oldest first.
type Queue struct {
	Tenant
	Pending []*Request
}

// Running is a batch on the device now.
type Running struct {
	Query   string
	Key     string
	Rows    int
	Started time.Time
	// End is when the profile says it ends (Started when it has no
	// estimate).
	End time.Time
}

// View is what a policy decides from: the time, the queues with requests
// waiting (requests running now are left out of Pending), what runs, the
// batch-time profiles and the arrival predictions of the worker.
type View struct {
	Now      time.Time
	Queues   []*Queue
	Running  []Running
	Profiles *Profiles
	Arrivals *Arrivals
	// Tenants are every query the scheduler has seen requests from,
	// waiting or not (a real-time query between two frames has no queue).
	Tenants []Tenant
	// InFlight are the real-time queries whose latest batch's model run
	// ended (when) and whose rows have not reached their sink on this
	// worker yet (Scheduler.Delivered).
	InFlight map[string]time.Time
}

// Decision is a policy's answer: run Rows rows of Run (0, or more than
// Run.Rows: all of them), or, with Run nil, nothing now; then Recheck, when
// set, is the latest time to ask again (the scheduler asks anyway at every
// arrival and every completion).
type Decision struct {
	Run  *Request
	Rows int
	// Variant, when set, runs the batch on that variant of the query's
	// Tenant.Variants (by name) instead of the bound session's.
	Variant string
	Recheck time.Time
	// Due, for a part sized to end before a real-time batch, is when that
	// batch is predicted to arrive (for Trace).
	Due time.Time
	// Why says why nothing runs (for tests and SHOW QUERIES).
	Why string
}

// Policy decides which queue's batch runs next on the worker and how large
// it is. Next is called with the scheduler's lock held, whenever a slot is
// free and requests wait; it must not block.
type Policy interface {
	Name() string
	// Slots is how many batches may run at once (0: no limit).
	Slots() int
	Next(v *View) Decision
}

// Profiling is implemented by policies that want each session measured at
// these batch sizes when it opens (the start of its profile).
type Profiling interface {
	ProfileSizes() []int
}

// Names of the built-in policies (`--sched`).
const (
	NaiveName     = "naive"
	DeepQueryName = "deepquery"
)

// Naive is the scheduling of a worker without a scheduler: every batch
// runs as soon as it arrives, whole, beside whatever runs (no slot limit,
// no priorities): the baseline.
type Naive struct{}

func (Naive) Name() string { return NaiveName }
func (Naive) Slots() int   { return 0 }

// Next runs the oldest waiting batch.
func (Naive) Next(v *View) Decision {
	var best *Request
	for _, q := range v.Queues {
		for _, r := range q.Pending {
			if best == nil || r.seq < best.seq {
				best = r
			}
			break
		}
	}
	return Decision{Run: best}
}

// Outcome is one granted part as it ran: what the policy predicted and
// what happened, for a policy that learns from its mistakes.
type Outcome struct {
	Query    string
	Priority Priority
	Key      string
	Rows     int
	// Started is when the part was granted; PredictedEnd when the profile
	// said it would end (Started without an estimate); Ended when it did.
	Started, PredictedEnd, Ended time.Time
	// RealTimeArrived is the earliest arrival of a real-time batch while
	// the part ran (zero: none did): from then on, the two shared the
	// device.
	RealTimeArrived time.Time
}

// Observer is implemented by policies that are told every part's Outcome
// (with the scheduler's lock held: it must not block).
type Observer interface {
	Observe(o Outcome)
}
