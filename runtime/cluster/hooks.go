package cluster

import (
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/runtime/inference/sched"
	"github.com/tierflow/tierflow/runtime/worker"
)

// Hooks are what tests, failure drills and benchmarks attach to an
// embedded cluster's workers (StartEmbeddedHooked); no part of Options,
// which a run sets. `run --link-trace`, a drill, shapes links with them.
type Hooks struct {
	// Shape, when set, caps the bytes per second embedded worker from
	// sends to worker to over the relay (0: no cap): tests and drills slow
	// one link down with it.
	Shape func(from, to string) float64
	// Shaper, when set, shapes the relay link from embedded worker from to
	// worker to to a bandwidth trace (nil: not shaped; `--link-trace`).
	Shaper func(from, to string) relay.Shaper
	// SchedPolicy, when set, is the embedded workers' policy itself (a
	// tuned sched.DeepQuery), over Options.Sched.
	SchedPolicy sched.Policy
	// OnLatency, when set, is told each end-to-end latency the embedded
	// workers' sinks measure, by query.
	OnLatency func(query string, d time.Duration, rows int64)
	// OnResult, when set, is told each batch the embedded workers' sinks
	// write, with its end-to-end latency, by query (`bench slo` scores
	// each answer by it).
	OnResult func(query string, d time.Duration, rec arrow.Record)
}

// of is worker from's side of the hooks.
func (h Hooks) of(from string) worker.Hooks {
	w := worker.Hooks{OnLatency: h.OnLatency, OnResult: h.OnResult}
	if h.Shape != nil {
		w.Shape = func(to string) float64 { return h.Shape(from, to) }
	}
	if h.Shaper != nil {
		w.Shaper = func(to string) relay.Shaper { return h.Shaper(from, to) }
	}
	return w
}
