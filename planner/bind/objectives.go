package bind

import (
	"errors"

	"github.com/tierflow/tierflow/lang"
)

// ErrNotSupported: a statement states something the language accepts but the
// planner does not act on yet. Such a query is refused rather than run as if
// the clause were not there.
var ErrNotSupported = errors.New("not supported yet")

// honoured is the one table of the objectives of WITH (...) that the planner
// acts on. An objective it does not honour would parse and change nothing,
// so the binder refuses a query that states one; the issue that teaches the
// planner an objective flips its entry here (and nothing else decides it).
func honoured(o lang.Objective) (name string, ok bool) {
	switch o.(type) {
	case *lang.AccuracyObjective:
		return "ACCURACY", true
	case *lang.ThroughputObjective:
		return "THROUGHPUT", true
	case *lang.LatencyObjective:
		// Issue 13: the run measures end-to-end latency and counts the rows
		// over it (summary, SHOW QUERIES, EXPLAIN ANALYZE).
		return "LATENCY", true
	case *lang.BudgetObjective:
		// Issue 19: the most accurate plan within the cost per hour
		// (optimize.WithinBudget).
		return "BUDGET", true
	case *lang.PriorityObjective:
		// Issue 15: the worker's inference scheduler runs a REALTIME
		// query's batches first and sizes BEST_EFFORT ones around them
		// (runtime/inference/sched), and placement weighs the load.
		return "PRIORITY", true
	}
	return "an objective of this kind", false
}
