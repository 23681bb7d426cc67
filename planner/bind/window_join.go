package bind

import (
	"strings"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// A join of two streams is windowed by a conjunct of its ON condition that
// equates the windows of the two sides, as Spark equates window columns:
//
//	FROM a JOIN b ON a.k = b.k AND TUMBLE(a.ts, INTERVAL '10' SECOND) = TUMBLE(b.ts, INTERVAL '10' SECOND)
//
// Rows join when their keys match and they fall in the same window (Flink's
// window join); the grammar has no window table functions to say it as Flink
// does (TABLE(TUMBLE(...)) with window_start = window_start).

// splitWindow splits ON into its AND-ed conjuncts and the one that equates
// two windows (nil when none does).
func splitWindow(on lang.Expr) (rest []lang.Expr, win *lang.BinaryExpr) {
	var walk func(e lang.Expr)
	walk = func(e lang.Expr) {
		if x, ok := e.(*lang.BinaryExpr); ok {
			switch x.Op {
			case lang.OpAnd:
				walk(x.Left)
				walk(x.Right)
				return
			case lang.OpEq:
				l, lok := x.Left.(*lang.FuncCall)
				r, rok := x.Right.(*lang.FuncCall)
				if lok && rok && isWindow(l.Name) && isWindow(r.Name) && win == nil {
					win = x
					return
				}
			}
		}
		rest = append(rest, e)
	}
	walk(on)
	return rest, win
}

// conjunction binds the remaining ON conjuncts as one predicate (nil when
// there are none: the window alone joins).
func (b *Binder) conjunction(conj []lang.Expr, sc *scope) expr.Expr {
	var args []expr.Expr
	for _, c := range conj {
		if p := b.predicate(c, sc, "ON"); p != nil {
			args = append(args, p)
		}
	}
	switch len(args) {
	case 0:
		return nil
	case 1:
		return args[0]
	}
	out, err := expr.NewLogic(expr.OpAnd, args...)
	return b.check(conj[0].Position(), out, err)
}

// joinWindow binds TUMBLE(l.ts, size) = TUMBLE(r.ts, size) of a join between
// left and right; both sides must be streams, one time per side.
func (b *Binder) joinWindow(j *lang.Join, eq *lang.BinaryExpr, left, right logical.Node, lsc, both *scope) *logical.JoinWindow {
	calls := [2]*lang.FuncCall{eq.Left.(*lang.FuncCall), eq.Right.(*lang.FuncCall)}
	for _, c := range calls {
		if !strings.EqualFold(c.Name, "TUMBLE") {
			b.errorf(c.Pos, ErrBind, "a join is windowed by TUMBLE windows only, not %s", strings.ToUpper(c.Name))
			return nil
		}
	}
	for i, side := range []logical.Node{left, right} {
		if !readsStream(side) {
			b.errorf(calls[i].Pos, ErrBind, "a windowed join joins two streams; the %s side reads only tables (join a table without a window)", [2]string{"left", "right"}[i])
			return nil
		}
	}
	ws := [2]*logical.Window{b.window(calls[0], both), b.window(calls[1], both)}
	if ws[0] == nil || ws[1] == nil {
		return nil
	}
	if ws[0].Size != ws[1].Size {
		b.errorf(eq.OpPos, ErrBind, "the windows of a join must have the same size, got %s and %s", ws[0].Size, ws[1].Size)
		return nil
	}
	nl := len(lsc.cols)
	// side reports 0 for a time over the left input, 1 for the right, -1
	// for one over both or neither.
	side := func(e expr.Expr) int {
		cols := expr.Columns(e)
		if len(cols) == 0 {
			return -1
		}
		if cols[len(cols)-1] < nl {
			return 0
		}
		if cols[0] >= nl {
			return 1
		}
		return -1
	}
	a, c := side(ws[0].Time), side(ws[1].Time)
	if a == 1 && c == 0 {
		ws[0], ws[1] = ws[1], ws[0]
		calls[0], calls[1] = calls[1], calls[0]
		a, c = 0, 1
	}
	if a != 0 || c != 1 {
		b.errorf(eq.OpPos, ErrBind, "a join window equates the time of the left input with the time of the right one, got %s and %s", lang.Print(calls[0].Args[0]), lang.Print(calls[1].Args[0]))
		return nil
	}
	return &logical.JoinWindow{Kind: logical.Tumble, LeftTime: ws[0].Time, RightTime: ws[1].Time, Size: ws[0].Size}
}

// readsStream reports whether a subtree scans a stream.
func readsStream(n logical.Node) bool {
	found := false
	logical.Walk(n, func(x logical.Node) bool {
		if s, ok := x.(*logical.Scan); ok && s.Stream != nil {
			found = true
		}
		return !found
	})
	return found
}
