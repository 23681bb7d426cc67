package physical

import (
	"math/bits"
	"time"

	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/optimize"
)

// Batching is the dynamic batching an ML operator runs with: batches of at
// most MaxBatch rows, no row waiting longer than MaxDelay, the batch size in
// between chosen at run time from the measured rate and batch latencies
// (Adaptive, operators/ml's Batcher). BatchFrom and DelayFrom say where each
// value comes from: "call" (the query's WITH (max_batch, max_delay_ms)),
// "catalog" (the model's max_batch, max_delay_ms) or "planner".
type Batching struct {
	MaxBatch  int
	MaxDelay  time.Duration
	Adaptive  bool
	BatchFrom string
	DelayFrom string
	// ComputeBudgetMs, for a query WITH (LATENCY <= x) whose variant has
	// latency by batch size, is what the bound leaves the operator after
	// the network (latency.go); BatchFrom and DelayFrom are then
	// "latency".
	ComputeBudgetMs float64
}

// Planner defaults, the runtime's own (runtime/inference): 5 ms of delay, at
// most 32 rows.
const (
	DefaultMaxDelay = 5 * time.Millisecond
	MaxPlannedBatch = 32
	MinPlannedBatch = 4
	// backlogWindows is how many MaxDelay windows of rows a batch may hold.
	backlogWindows = 4
)

// batching picks an ML operator's batching. The call's values win, then the
// catalog's; otherwise the delay is the runtime default and the batch size
// comes from the plan: the rows the operator's busiest worker receives in
// four delay windows, rounded up to a power of two, between 4 and 32. The
// adaptive batcher never waits for more than one window of rows (a bigger
// batch is cut by the delay anyway), so rows beyond that only serve to drain
// a backlog, four times faster than one builds; more would size the model's
// batch buffers and the worst batch latency for a load the plan does not
// send there.
func batching(st nodeModel, maxItemsPerSec float64) *Batching {
	b := &Batching{Adaptive: true, MaxDelay: DefaultMaxDelay, DelayFrom: "planner", BatchFrom: "planner"}
	if m := st.model; m != nil {
		if m.MaxDelayMs > 0 {
			b.MaxDelay, b.DelayFrom = time.Duration(m.MaxDelayMs*float64(time.Millisecond)), "catalog"
		}
		if m.MaxBatch > 0 {
			b.MaxBatch, b.BatchFrom = m.MaxBatch, "catalog"
		}
	}
	if c := st.call; c != nil {
		if c.Batch.MaxDelay > 0 {
			b.MaxDelay, b.DelayFrom = c.Batch.MaxDelay, "call"
		}
		if c.Batch.MaxBatch > 0 {
			b.MaxBatch, b.BatchFrom = c.Batch.MaxBatch, "call"
		}
	}
	if b.BatchFrom == "planner" {
		rows := maxItemsPerSec * b.MaxDelay.Seconds() * backlogWindows
		n := MaxPlannedBatch
		if rows < MaxPlannedBatch {
			n = max(MinPlannedBatch, 1<<bits.Len(uint(max(int(rows+0.999999)-1, 0))))
		}
		b.MaxBatch = min(n, MaxPlannedBatch)
	}
	return b
}

// nodeModel is what batching needs of a stage.
type nodeModel struct {
	model *catalog.Model
	call  *logical.LateralModel
}

// Reservations are the capacity the plans of running queries (by query id)
// hold on their workers, as the optimizer takes it (Problem.Reserved): per
// worker, the items/s each operator sends it over its capacity.
func Reservations(running map[string]*Plan) []optimize.Reservation {
	ops := map[string]*optimize.Plan{}
	for id, p := range running {
		if p == nil {
			continue
		}
		op := &optimize.Plan{Feasible: p.Feasible}
		for _, o := range p.Operators {
			x := optimize.OperatorPlan{Name: o.Name}
			for _, w := range o.Workers {
				x.Workers = append(x.Workers, optimize.WorkerShare{Name: w.Name, ItemsPerSec: w.ItemsPerSec, Capacity: w.Capacity})
			}
			op.Operators = append(op.Operators, x)
		}
		ops[id] = op
	}
	return optimize.ReservationsOf(ops)
}
