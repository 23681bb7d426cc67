package exec

import (
	"time"

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
