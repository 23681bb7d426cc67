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
			if k, lag, ok := closingKey(n); ok && k == i {
				return lag + closingGrain
			}
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
		if j, ok := n.Input.(*logical.Join); ok {
			return joinAttr(j, n.Pred, i)
		}
		return columnAttr(n.Input, i)
	case *logical.Join:
		return joinAttr(n, nil, i)
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
			// A closing aggregation's group goes out at the epoch its key's
			// grain ends (plus lag), at most closingGrain after the key.
			if k, lag, ok := closingKey(n); ok && k == i {
				return lag + closingGrain, true
			}
			return 0, false
		}
		if procTime(n.Input, w.Time) {
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

// joinAttr reports whether column i of a regular join of two streams (with
// filter, the predicate right above it, which bounds its state as ON does)
// is a time attribute of its output: a column of one side that is one of
// that side's time bounds (joinBounds) is. A kept row is used at epoch E
// only while its bound plus the bound's lag is at or past Watermark(E),
// and a row new at E meets only rows whose time is not behind E unless one
// of the pair is late, so every output row at E that no late row made has
// column >= Watermark(E) - lag. Nexmark's q6: an auction's expires in
// B.dateTime BETWEEN A.dateTime AND A.expires, which lets a GROUP BY A.id,
// A.seller, A.expires close each auction (closingKey).
func joinAttr(j *logical.Join, filter expr.Expr, i int) (time.Duration, bool) {
	if !streamJoin(j) || j.Kind != logical.InnerJoin && j.Kind != logical.CrossJoin {
		return 0, false
	}
	cond := j.On
	if filter != nil {
		cond = and(cond, filter)
	}
	nl := j.Left.Schema().NumFields()
	s, col := 0, i
	if i >= nl {
		s, col = 1, i-nl
	}
	for _, b := range joinBounds(j, cond)[s] {
		// A bound c + d (or c - d, or c) with lag L: c + d >= W - L, so c
		// trails the watermark by L + d.
		if c, d, ok := columnOffset(b.Expr); ok && c == col {
			return max(0, time.Duration(b.Lag)*time.Microsecond+d), true
		}
	}
	return 0, false
}

// columnOffset reads e as column c plus the constant interval d.
func columnOffset(e expr.Expr) (c int, d time.Duration, ok bool) {
	switch e := e.(type) {
	case *expr.Column:
		return e.Index, 0, true
	case *expr.Cast:
		if e.To.ID() == e.Expr.Type().ID() {
			return columnOffset(e.Expr)
		}
	case *expr.Call:
		if len(e.Args) == 2 && (e.Func == "subtract" || e.Func == "add") {
			if l, isLit := e.Args[1].(*expr.Literal); isLit {
				if v, isDur := l.Value.(time.Duration); isDur {
					c, d, ok = columnOffset(e.Args[0])
					if e.Func == "subtract" {
						v = -v
					}
					return c, d + v, ok
				}
			}
		}
	}
	return 0, 0, false
}

// timeGrain is how coarsely n's rows bring e's values to the watermark:
// the grain a closing GROUP BY's key closes by (closingGrain), when e is
// that key carried through filters, projections and unions whose inputs
// all share it. Its groups whose keys fall in one grain go out together,
// at the grain's end plus the key's lag, so an OVER ordered by the key
// gains nothing from epochs finer than the grain (rel.StreamOver.SetGrain).
// 0 for anything else: a source's event time, or a window's bounds, whose
// values are already whole windows.
func timeGrain(n logical.Node, e expr.Expr) time.Duration {
	switch e := e.(type) {
	case *expr.Cast:
		if e.To.ID() == e.Expr.Type().ID() {
			return timeGrain(n, e.Expr)
		}
	case *expr.Column:
		switch n := n.(type) {
		case *logical.Filter:
			return timeGrain(n.Input, e)
		case *logical.Project:
			if e.Index < len(n.Exprs) {
				return timeGrain(n.Input, n.Exprs[e.Index])
			}
		case *logical.Union:
			var g time.Duration
			for i, in := range n.Inputs {
				gi := timeGrain(in, e)
				if i > 0 && gi != g {
					return 0
				}
				g = gi
			}
			return g
		case *logical.Aggregate:
			if k, _, ok := closingKey(n); ok && n.Window == nil && k == e.Index {
				return closingGrain
			}
		}
	}
	return 0
}

// closingGrain is how finely a closing GROUP BY closes its groups: those
// whose key falls in one whole second close together, when the watermark
// passes the second's end (plus lag). A finer grain answers sooner but
// keeps a window (its key table and accumulators) per grain with rows, and
// a stream with a distinct time per row (a key per row) would then keep one
// per row until the watermark passes it.
const closingGrain = time.Second

// closingKey finds the group key a GROUP BY on a stream closes its groups
// by: a key that is a time attribute of its input (the smallest lag when
// several are). Every row not late at watermark W has key >= W - lag, so
// once the watermark passes key + lag the group can take no row that is
// not late: it goes out then, as a window does when the watermark passes
// its end, and rows that come for it later are late. Without such a key a
// GROUP BY on a stream answers when its input ends. Flink closes a window
// aggregation grouped by a window TVF's window_start and window_end the
// same way; this is the rule for any time attribute.
func closingKey(n *logical.Aggregate) (k int, lag time.Duration, ok bool) {
	if n.Window != nil || bounded(n.Input) {
		return 0, 0, false
	}
	for i, g := range n.Group {
		if g.Type().ID() != arrow.TIMESTAMP {
			continue
		}
		if l, attr := timeAttr(n.Input, g); attr && (!ok || l < lag) {
			k, lag, ok = i, max(l, 0), true
		}
	}
	return k, lag, ok
}

// procTime reports whether e over n's rows is processing time: a
// PROCTIME() call, or a column that carries one through projections and
// filters. A window over it closes by the processing time its rows carry,
// never by the watermark (rel.WindowSpec.ProcTime), and its window_start
// and window_end are no time attributes.
func procTime(n logical.Node, e expr.Expr) bool {
	switch e := e.(type) {
	case *expr.Call:
		return e.Func == "proctime"
	case *expr.Cast:
		return procTime(n, e.Expr)
	case *expr.Column:
		switch n := n.(type) {
		case *logical.Filter:
			return procTime(n.Input, e)
		case *logical.Project:
			return e.Index < len(n.Exprs) && procTime(n.Input, n.Exprs[e.Index])
		}
	}
	return false
}
