package control

import (
	"time"

	"github.com/tierflow/tierflow/dataflow"
)

// Summary is what `tierflow run --stats FILE` and `submit --stats FILE`
// write when a query ends. The field names are a contract with the scripts
// that read them.
type Summary struct {
	RowsIn  int64 `json:"rows_in"`
	RowsOut int64 `json:"rows_out"`
	// Dropped counts the rows the query dropped, by reason (late, malformed,
	// ...); every reason the runtime counts is present, zeros included.
	Dropped   map[string]int64 `json:"dropped"`
	LatencyMs LatencyMs        `json:"latency_ms"`
	// SLOMissRate is the share of result rows whose end-to-end latency was
	// over the query's LATENCY bound, the rows dropped lazily before
	// compute (Dropped["deadline"]) counted among both; nil (null)
	// without one.
	SLOMissRate *float64   `json:"slo_miss_rate"`
	Replans     []Replan   `json:"replans"`
	Recoveries  []Recovery `json:"recoveries"`
	ElapsedS    float64    `json:"elapsed_s"`
	// SLOTimeline is the latency-SLO policy's view over time (per source:
	// bandwidth estimated and shaped, variants run), when it ran.
	SLOTimeline []SLOSample `json:"slo_timeline,omitempty"`
}

// LatencyMs are end-to-end latency percentiles in milliseconds, over every
// row the query's sinks wrote.
type LatencyMs struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
}

// Replan is one change of plan while the query ran: from epoch on, the new
// variant or worker choice replaced the old one. Seconds is the cut-over's
// time, from the policy's decision until result rows flowed past epoch
// (0 while they do not yet).
type Replan struct {
	Epoch   uint64  `json:"epoch"`
	Reason  string  `json:"reason"`
	Old     string  `json:"old"`
	New     string  `json:"new"`
	Seconds float64 `json:"seconds"`
	// Cut is where the cut-over's time went (nil for a plan history that a
	// restarted coordinator learned back).
	Cut *CutOver `json:"cut,omitempty"`
}

// CutOver breaks a re-plan's cut-over down, in milliseconds from the
// policy's decision (Decided): the new plan placed (PlanMs), the older
// generation's parts stopped (StopMs, each worker's answer, with how far
// its sinks committed, in), every worker's new part built (DeployMs, the
// round trip; of it, BuildMs building on the slowest worker, compile and
// model sessions included) and the new generation told to start
// (StartMs, from the decision). From there its sources replay from Epoch.
type CutOver struct {
	Decided  time.Time `json:"decided"`
	PlanMs   float64   `json:"plan_ms"`
	StopMs   float64   `json:"stop_ms"`
	DeployMs float64   `json:"deploy_ms"`
	BuildMs  float64   `json:"build_ms"`
	StartMs  float64   `json:"start_ms"`
}

// LostServer is the LostWorker of a recovery from a NATS server outage:
// the query was re-deployed once the connections came back.
const LostServer = "nats-server"

// LostCoordinator is the LostWorker of a recovery by a restarted
// coordinator of a query whose re-deployment its predecessor had not
// started when it went away: the new one deploys the query again.
const LostCoordinator = "coordinator"

// Recovery is one lost worker (or NATS server: LostServer) the query
// survived: it resumed from epoch, and rows flowed again Seconds after the
// loss was noticed.
type Recovery struct {
	Epoch      uint64  `json:"epoch"`
	LostWorker string  `json:"lost_worker"`
	Seconds    float64 `json:"seconds"`
	// LostMessages counts the messages published on the query's core NATS
	// streams while it was re-deployed: core NATS keeps nothing for a
	// subscriber that is not there, so they are lost (file and JetStream
	// streams replay and lose nothing). Messages the lost worker had
	// received but not yet passed on are lost too, uncounted.
	LostMessages int64 `json:"lost_messages,omitempty"`
}

// Run is what a Summary is made from: the query's operator statistics (from
// every worker), the rows its result had, what it dropped, its LATENCY bound
// (0: none) and how long it ran.
type Run struct {
	Operators  []dataflow.InstanceStats
	ResultRows int64
	Dropped    map[string]int64
	LatencySLO time.Duration
	Elapsed    time.Duration
	// EarlierEndToEnd and EarlierSLOMissRows are the sinks' measures of
	// generations that ended before a re-plan or recovery (Dropped counts
	// them already): latency and the miss rate cover the whole query.
	EarlierEndToEnd    dataflow.Histogram
	EarlierSLOMissRows int64
}

// EndToEnd merges the end-to-end latency of every sink instance, and counts
// the rows they wrote over the SLO.
func EndToEnd(ops []dataflow.InstanceStats) (h dataflow.Histogram, missed int64) {
	for _, op := range ops {
		h.Add(op.EndToEnd)
		missed += op.SLOMissRows
	}
	return h, missed
}

// Percentiles reads p50, p95 and p99 of h in milliseconds.
func Percentiles(h dataflow.Histogram) LatencyMs {
	ms := func(q float64) float64 { return float64(h.Quantile(q)) / float64(time.Millisecond) }
	return LatencyMs{P50: ms(0.50), P95: ms(0.95), P99: ms(0.99)}
}

// Summarize makes the summary of a run. Rows in are the rows the query's
// sources produced (operators named "scan ..."); rows out the result's.
func Summarize(r Run) Summary {
	s := Summary{RowsOut: r.ResultRows, Dropped: map[string]int64{}, Replans: []Replan{}, Recoveries: []Recovery{},
		ElapsedS: r.Elapsed.Seconds()}
	for _, op := range r.Operators {
		if isSource(op) {
			s.RowsIn += op.RowsOut
		}
	}
	for _, k := range dataflow.DropReasons {
		s.Dropped[k] = 0
	}
	for k, v := range r.Dropped {
		s.Dropped[k] = v
	}
	h, missed := EndToEnd(r.Operators)
	h.Add(r.EarlierEndToEnd)
	missed += r.EarlierSLOMissRows
	s.LatencyMs = Percentiles(h)
	if r.LatencySLO > 0 {
		// A row dropped lazily before compute missed its deadline too.
		late := r.Dropped[dataflow.DropDeadline]
		rate := 0.0
		if n := int64(h.Count) + late; n > 0 {
			rate = float64(missed+late) / float64(n)
		}
		s.SLOMissRate = &rate
	}
	return s
}

// isSource: operators/exec names its source operators "scan <stream>".
func isSource(op dataflow.InstanceStats) bool {
	return len(op.Operator) > 5 && op.Operator[:5] == "scan "
}
