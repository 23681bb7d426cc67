package worker

import (
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/relay"
)

// Hooks are what tests, failure drills and benchmarks attach to a worker
// (StartHooked); no part of its Config, which a deployment sets.
type Hooks struct {
	// OnLatency, when set, is told each end-to-end latency the worker's
	// sinks measure, by query (dataflow.Config.OnLatency).
	OnLatency func(query string, d time.Duration, rows int64)
	// OnResult, when set, is told each batch the worker's sinks write,
	// with its end-to-end latency, by query (dataflow.Config.OnResult):
	// benchmarks that score answers.
	OnResult func(query string, d time.Duration, rec arrow.Record)
	// Shape, when set, caps the bytes per second this worker's relay
	// sends to worker to (0: no cap): failure drills and tests slow one
	// link down with it (natsrelay.Options.Shape).
	Shape func(to string) float64
	// Shaper, when set, shapes this worker's relay sends to worker to to
	// a bandwidth that changes over time (nil: none; `run --link-trace`,
	// natsrelay.Options.Shaper).
	Shaper func(to string) relay.Shaper
}
