package exec

import (
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// Event time after a window (docs/language.md, "Event time"): a window's
// rows go out at the epoch of window_end (plus the lag of the window's own
// time column), so window_end is a time attribute that keeps pace with the
// watermark, and window_start trails it by the window's size. A window over
// a column that trails the epochs by a known lag closes that much later
// and judges its rows that much later, so a HOP's window_start can time a
// TUMBLE downstream without every row falling behind the watermark.

// timeLag is how far the epochs of n's rows run ahead of e's value: 0 for a
// source's event time, the upstream window's size for its window_start.
// Anything it cannot trace to a time attribute (an expression over one,
// a join's column) has lag 0: its rows are judged by the epoch alone.
func timeLag(n logical.Node, e expr.Expr) time.Duration {
	switch e := e.(type) {
	case *expr.Column:
		return columnLag(n, e.Index)
	case *expr.Call:
		// t - INTERVAL d trails t by d more (window_time is window_end
		// less 1 µs); t + INTERVAL d by d less.
		if len(e.Args) == 2 && (e.Func == "subtract" || e.Func == "add") {
			if l, ok := e.Args[1].(*expr.Literal); ok {
				if d, ok := l.Value.(time.Duration); ok {
					if e.Func == "add" {
						d = -d
					}
					return max(0, timeLag(n, e.Args[0])+d)
				}
			}
		}
	}
	return 0
}

func columnLag(n logical.Node, i int) time.Duration {
	switch n := n.(type) {
	case *logical.Filter:
		return columnLag(n.Input, i)
	case *logical.Project:
		if i < len(n.Exprs) {
			return timeLag(n.Input, n.Exprs[i])
		}
	case *logical.Union:
		// A union's epochs are its inputs': the larger lag holds for all.
		var lag time.Duration
		for _, in := range n.Inputs {
			lag = max(lag, columnLag(in, i))
		}
		return lag
	case *logical.Aggregate:
		w := n.Window
		if w == nil {
			return 0
		}
		in := timeLag(n.Input, w.Time)
		switch i - len(n.Group) {
		case 0: // window_start
			if w.Kind == logical.Session {
				// A session is as long as its rows keep coming: its start
				// trails its end by no bound.
				return 0
			}
			return in + w.Size
		case 1: // window_end
			return in
		}
	}
	return 0
}

// timeAttr reports whether e is a time attribute of n's rows, and how far
// it may trail the epochs: every row at epoch E that is not late has e >=
// Watermark(E) - lag. A stream's event time has lag 0, a window's
// window_end its time column's lag (its rows go out at that epoch), its
// window_start the window's size more; t - INTERVAL d trails t by d more.
// A join's columns, an OVER's, a table's, or any other expression are not
// time attributes: nothing bounds them by the watermark.
func timeAttr(n logical.Node, e expr.Expr) (time.Duration, bool) {
	switch e := e.(type) {
	case *expr.Column:
		return columnAttr(n, e.Index)
	case *expr.Cast:
		if e.To.ID() == e.Expr.Type().ID() {
			return timeAttr(n, e.Expr)
		}
	case *expr.Call:
		if len(e.Args) == 2 && (e.Func == "subtract" || e.Func == "add") {
			if l, ok := e.Args[1].(*expr.Literal); ok {
				if d, ok := l.Value.(time.Duration); ok {
					lag, ok := timeAttr(n, e.Args[0])
					if e.Func == "add" {
						d = -d
					}
					return lag + d, ok
				}
			}
		}
	}
	return 0, false
}

func columnAttr(n logical.Node, i int) (time.Duration, bool) {
	switch n := n.(type) {
	case *logical.Scan:
		if n.Stream == nil {
			return 0, false
		}
		src := i
		if n.Columns != nil {
			if i >= len(n.Columns) {
				return 0, false
			}
			src = n.Columns[i]
		}
		// The event time is the source's first TIMESTAMP column (builder.eventTime).
		cols := n.SourceColumns()
		if len(cols) == 0 {
			if n.Columns != nil {
				return 0, false
			}
			for k, f := range n.Schema().Fields() {
				if f.Type.ID() == arrow.TIMESTAMP {
					return 0, k == src
				}
			}
			return 0, false
		}
		for k, c := range cols {
			if f, err := c.Field(); err == nil && f.Type.ID() == arrow.TIMESTAMP {
				return 0, k == src
			}
		}
	case *logical.Filter:
		return columnAttr(n.Input, i)
	case *logical.Project:
		if i < len(n.Exprs) {
			return timeAttr(n.Input, n.Exprs[i])
		}
	case *logical.Union:
		var lag time.Duration
		for _, in := range n.Inputs {
			l, ok := columnAttr(in, i)
			if !ok {
				return 0, false
			}
			lag = max(lag, l)
		}
		return lag, len(n.Inputs) > 0
	case *logical.Aggregate:
		w := n.Window
		if w == nil {
			return 0, false
		}
		// A window's rows go out at the epoch of window_end plus its time's
		// lag (whatever that time is), so these two keep pace.
		in := timeLag(n.Input, w.Time)
		switch i - len(n.Group) {
		case 0: // window_start
			return in + w.Size, w.Kind != logical.Session
		case 1: // window_end
			return in, true
		}
	}
	return 0, false
}
