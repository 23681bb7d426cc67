package deploy

import (
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// rowwise: every row of n comes from one row of its streams alone (and
// rows of static tables), at the epoch that row went out at: scans of
// streams, filters, projections, model calls, unions, the sink, and joins
// of a row-wise side with a side that reads no stream (an inner join, or a
// left join whose left side is the streaming one).
func rowwise(n logical.Node) bool {
	switch x := n.(type) {
	case *logical.Scan:
		return x.Stream != nil
	case *logical.Filter, *logical.Project, *logical.LateralModel, *logical.Union, *logical.Sink, *logical.Adapt:
	case *logical.Join:
		if x.Window != nil || x.Kind == logical.CrossJoin {
			return false
		}
		switch {
		case staticOnly(x.Right):
			return rowwise(x.Left)
		case staticOnly(x.Left) && x.Kind == logical.InnerJoin:
			return rowwise(x.Right)
		}
		return false
	default:
		return false // aggregates, windows, sorts, limits keep state
	}
	for _, ch := range n.Children() {
		if !rowwise(ch) {
			return false
		}
	}
	return true
}

// staticOnly: n reads no stream (tables only).
func staticOnly(n logical.Node) bool {
	if s, ok := n.(*logical.Scan); ok {
		return s.Stream == nil
	}
	for _, ch := range n.Children() {
		if !staticOnly(ch) {
			return false
		}
	}
	return true
}

// eventTime: column col of n is, unchanged, the event time of the stream
// it comes from (the stream's first TIMESTAMP column, which its source's
// watermark follows).
func eventTime(n logical.Node, col int) bool {
	switch x := n.(type) {
	case *logical.Scan:
		if x.Stream == nil || col < 0 || col >= len(x.Columns) {
			return false
		}
		for i, c := range x.Stream.Columns {
			if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(c.Type)), "TIMESTAMP") {
				return x.Columns[col] == i
			}
		}
		return false
	case *logical.Filter:
		return eventTime(x.Input, col)
	case *logical.Project:
		c, ok := x.Exprs[col].(*expr.Column)
		return ok && eventTime(x.Input, c.Index)
	case *logical.Join:
		nl := len(x.Left.Schema().Fields())
		if col < nl {
			return staticOnly(x.Right) && eventTime(x.Left, col)
		}
		return staticOnly(x.Left) && eventTime(x.Right, col-nl)
	}
	return false
}

// resumeAt says how a re-deployed query resumes at epoch e, the epoch
// below which its sinks committed every result. A row-wise query skips
// what its file streams sent below e (every result of those rows is
// committed). A query whose only state is TUMBLE windows over its
// streams' event time, under row-wise operators, skips the rows of the
// windows that closed below e: a window goes out at the epoch of its end,
// so those below the first window ending at or after e are committed, and
// the rows it skips belong to them alone. Anything else (other windows,
// joins of streams, sorts, limits) replays from the start to rebuild its
// state: skip and below are 0.
func resumeAt(n logical.Node, e uint64) (skip, below uint64) {
	switch x := n.(type) {
	case *logical.Sink, *logical.Filter, *logical.Project, *logical.LateralModel:
		if rowwise(n) {
			return e, 0
		}
		return resumeAt(n.Children()[0], e)
	case *logical.Aggregate:
		w := x.Window
		if w == nil || w.Kind != logical.Tumble || w.Size <= 0 || !rowwise(x.Input) {
			return 0, 0
		}
		c, ok := w.Time.(*expr.Column)
		if !ok || !eventTime(x.Input, c.Index) {
			return 0, 0
		}
		size := uint64(w.Size / time.Microsecond)
		if e < size {
			return 0, 0
		}
		// The first window to replay starts at the smallest multiple of
		// size that is at least e - size (its end is at least e).
		return 0, (e - size + size - 1) / size * size
	}
	if rowwise(n) {
		return e, 0
	}
	return 0, 0
}

// streamResumer is a source that can start at a recorded stream position
// (runtime/connectors' JetStream sources).
type streamResumer interface {
	ResumeAt(sources.Position)
}

// resumeStreams wraps an exec.Options.Stream hook so that a query resumed
// at epoch e starts each replayable stream at the last recorded position
// before the first TUMBLE window it replays (resumeAt's below): every
// message before it belongs to windows committed below e. A query of
// another shape (row-wise, whose rows' epochs depend on how its batches
// fell, or other state) replays its streams from the start.
func resumeStreams(hook streamHook, plan *logical.Plan, e uint64, pos map[string]sources.Positions) streamHook {
	_, below := resumeAt(plan.Root, e)
	if below == 0 {
		return hook
	}
	return func(st *catalog.Stream, schema *arrow.Schema, cols []int, et sources.EventTime, report *sources.Report) (func() (dataflow.Operator, error), error) {
		mk, err := hook(st, schema, cols, et, report)
		if err != nil {
			return nil, err
		}
		p, ok := pos[st.Name].Before(int64(below))
		if !ok {
			return mk, nil
		}
		return func() (dataflow.Operator, error) {
			op, err := mk()
			if r, isR := op.(streamResumer); err == nil && isR {
				r.ResumeAt(p)
			}
			return op, err
		}, nil
	}
}

// ResumeSeqs is, by stream, the stream sequence a recovery of plan at
// epoch e would start its JetStream streams at, given the positions the
// coordinator knows (as resumeStreams does on the workers); a stream not
// in it replays from its start, as does every stream of a query whose
// shape resumes no stream at a position (resumeAt). A source reports its positions with its
// worker's status, so those it took since its last report are lost with
// a killed worker: until they arrive, a query that has committed e still
// replays the stream from further back, or from its start.
func ResumeSeqs(plan *logical.Plan, e uint64, pos map[string]sources.Positions) map[string]uint64 {
	if plan == nil || e == 0 || len(pos) == 0 {
		return nil
	}
	_, below := resumeAt(plan.Root, e)
	if below == 0 {
		return nil
	}
	var out map[string]uint64
	for name, ps := range pos {
		if p, ok := ps.Before(int64(below)); ok {
			if out == nil {
				out = map[string]uint64{}
			}
			out[name] = p.Seq
		}
	}
	return out
}

type streamHook = func(*catalog.Stream, *arrow.Schema, []int, sources.EventTime, *sources.Report) (func() (dataflow.Operator, error), error)
