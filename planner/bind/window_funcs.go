package bind

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/internal/yamlx"
	"github.com/tierflow/tierflow/planner/logical"
)

// winBase is the column index the binder gives window function results
// while the width of their input is not yet known (a grouping query adds
// aggregates as its SELECT list binds); placeWindows moves them after it.
const winBase = 1 << 24

// winScope collects the window function calls (f(...) OVER (...)) of one
// SELECT block: only its SELECT list and ORDER BY may hold them (DuckDB
// evaluates them after WHERE, GROUP BY and HAVING).
type winScope struct {
	funcs []*logical.WindowFunc
	// defs are the block's WINDOW name AS (...), by lower-case name.
	defs map[string]*lang.WindowSpec
	// inside is the call whose arguments are being bound: another window
	// function there is an error.
	inside *lang.FuncCall
}

// rankingFuncs take no frame and no arguments (ntile takes its count).
var rankingFuncs = map[string]bool{
	"row_number": true, "rank": true, "dense_rank": true, "percent_rank": true, "cume_dist": true, "ntile": true,
}

// sortedKeys are the names of the sets, sorted (a suggestion's ties go the
// same way every time).
func sortedKeys(sets ...map[string]bool) []string {
	var out []string
	for _, set := range sets {
		for n := range set {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// valueFuncs return a value of another row of the partition or frame.
var valueFuncs = map[string]bool{
	"lag": true, "lead": true, "first_value": true, "last_value": true, "nth_value": true,
}

func isWindowOnly(name string) bool {
	n := strings.ToLower(name)
	return rankingFuncs[n] || valueFuncs[n]
}

// hasWindowCall reports whether e holds a window function call.
func hasWindowCall(e lang.Node) bool {
	found := false
	lang.Inspect(e, func(n lang.Node) bool {
		if _, ok := n.(*lang.Query); ok {
			return false // a subquery's window functions are its own
		}
		if x, ok := n.(*lang.FuncCall); ok && x.Over != nil {
			found = true
		}
		return !found
	})
	return found
}

// windowCall binds f(args) OVER (...) in the SELECT list or ORDER BY of a
// block, over the rows the projection reads (ac: a grouping query's groups);
// it returns the column that will hold the result.
func (b *Binder) windowCall(x *lang.FuncCall, sc *scope, ac *aggScope) expr.Expr {
	name := strings.ToLower(x.Name)
	switch {
	case b.wins == nil:
		b.errorf(x.Pos, ErrBind, "window function %s is not allowed in %s: only the SELECT list and ORDER BY may hold OVER (...)", name, b.clauseName())
		return nil
	case b.wins.inside != nil:
		b.errorf(x.Pos, ErrBind, "window function %s cannot be nested inside window function %s", name, strings.ToLower(b.wins.inside.Name))
		return nil
	case ac != nil && ac.inside != nil:
		b.errorf(x.Pos, ErrBind, "window function %s cannot be nested inside aggregate %s", name, strings.ToLower(ac.inside.Name))
		return nil
	}
	ws := b.wins
	ws.inside = x
	defer func() { ws.inside = nil }()
	f := &logical.WindowFunc{Func: name, Frame: logical.DefaultFrame, Pos: Pos(x.Pos)}
	ok := true
	bind := func(e lang.Expr) expr.Expr {
		v := b.expr(e, sc, ac)
		if v == nil {
			ok = false
		}
		return v
	}
	for _, a := range x.Args {
		f.Args = append(f.Args, bind(a))
	}
	spec := x.Over.Spec
	if spec == nil {
		if spec = ws.defs[strings.ToLower(x.Over.Name)]; spec == nil {
			var have []string
			for n := range ws.defs {
				have = append(have, n)
			}
			sort.Strings(have)
			b.unknown(x.Over.Pos, "window", x.Over.Name, have)
			return nil
		}
	}
	for _, p := range spec.PartitionBy {
		f.Partition = append(f.Partition, bind(p))
	}
	for _, o := range spec.OrderBy {
		f.Order = append(f.Order, logical.WindowKey{Expr: bind(o.Expr), Desc: o.Desc, NullsFirst: o.Nulls == "FIRST"})
	}
	if !ok {
		return nil
	}
	if !b.windowSignature(x, f) {
		return nil
	}
	if spec.Frame != nil {
		fr, ok := b.frame(spec, f)
		if !ok {
			return nil
		}
		f.Frame = fr
	}
	ws.funcs = append(ws.funcs, f)
	i := len(ws.funcs) - 1
	return &expr.Column{Index: winBase + i, Name: fmt.Sprintf("win%d", i), DataType: f.DataType}
}

// newWinScope starts the window functions of block s, with its WINDOW
// clause's names.
func (b *Binder) newWinScope(s *lang.Select) *winScope {
	ws := &winScope{defs: map[string]*lang.WindowSpec{}}
	for _, d := range s.Windows {
		k := strings.ToLower(d.Name)
		if ws.defs[k] != nil {
			b.errorf(d.Pos, ErrBind, "window %s is defined twice", d.Name)
			continue
		}
		ws.defs[k] = d.Spec
	}
	return ws
}

// windowSignature checks a call's arguments and sets its result type.
func (b *Binder) windowSignature(x *lang.FuncCall, f *logical.WindowFunc) bool {
	name := f.Func
	if x.Distinct && (rankingFuncs[name] || valueFuncs[name]) {
		b.errorf(x.Pos, ErrBind, "%s is not an aggregate: DISTINCT does not apply", name)
		return false
	}
	nargs := func(lo, hi int, what string) bool {
		if len(f.Args) < lo || len(f.Args) > hi || x.Star {
			b.errorf(x.Pos, ErrBind, "%s takes %s, got %d", name, what, len(f.Args))
			return false
		}
		return true
	}
	// constInt reads argument i, which must be an integer literal >= min.
	constInt := func(i int, min int64, what string) (int64, bool) {
		n, isNum := x.Args[i].(*lang.NumberLit)
		var v int64
		var err error
		if isNum {
			v, err = n.Int64()
		}
		if !isNum || err != nil || v < min {
			b.errorf(x.Args[i].Position(), ErrBind, "%s of %s wants an integer constant of at least %d, got %s", what, name, min, lang.Print(x.Args[i]))
			return 0, false
		}
		return v, true
	}
	switch {
	case rankingFuncs[name]:
		if name == "ntile" {
			if !nargs(1, 1, "one argument (the number of buckets)") {
				return false
			}
			if _, ok := constInt(0, 1, "the bucket count"); !ok {
				return false
			}
		} else if !nargs(0, 0, "no arguments") {
			return false
		}
		f.DataType = expr.Int64
		if name == "percent_rank" || name == "cume_dist" {
			f.DataType = expr.Float64
		}
		return true
	case name == "lag" || name == "lead":
		if !nargs(1, 3, "1 to 3 arguments (value, offset, default)") {
			return false
		}
		if len(f.Args) >= 2 {
			if _, ok := constInt(1, 0, "the offset"); !ok {
				return false
			}
		}
		f.DataType = f.Args[0].Type()
		if len(f.Args) == 3 {
			t, ok := expr.CommonType(f.Args[0].Type(), f.Args[2].Type())
			if !ok {
				b.errorf(x.Args[2].Position(), ErrBind, "the default of %s is %s, the value %s", name, expr.TypeName(f.Args[2].Type()), expr.TypeName(f.Args[0].Type()))
				return false
			}
			f.DataType = t
			f.Args[0], f.Args[2] = expr.CastTo(f.Args[0], t), expr.CastTo(f.Args[2], t)
		}
		return true
	case name == "first_value" || name == "last_value":
		if !nargs(1, 1, "one argument") {
			return false
		}
		f.DataType = f.Args[0].Type()
		return true
	case name == "nth_value":
		if !nargs(2, 2, "two arguments (value, n)") {
			return false
		}
		if _, ok := constInt(1, 1, "n"); !ok {
			return false
		}
		f.DataType = f.Args[0].Type()
		return true
	}
	if fn, ok := b.Funcs.Lookup(name); ok && fn.Kind == expr.AggregateKind {
		// Any aggregate runs over a frame: sum, count, avg, min and max
		// with running and sliding state, the others frame by frame.
		a, err := b.Funcs.NewAggregate(name, x.Distinct, f.Args...)
		if err != nil {
			b.errorf(x.Pos, ErrBind, "%v", err)
			return false
		}
		f.Args, f.DataType, f.Distinct = a.Args, a.Type(), x.Distinct
		return true
	}
	names := sortedKeys(rankingFuncs, valueFuncs)
	for _, fn := range b.Funcs.Functions() {
		if fn.Kind == expr.AggregateKind && !fn.Internal {
			names = append(names, fn.Name)
		}
	}
	hint := ""
	if s := yamlx.Suggest(name, names); s != "" {
		hint = fmt.Sprintf("did you mean %q? ", s)
	}
	b.errorf(x.Pos, ErrUnknown, "unknown window function %s (%swant row_number, rank, dense_rank, percent_rank, cume_dist, ntile, lag, lead, first_value, last_value, nth_value, or an aggregate)", name, hint)
	return false
}

// frame reads ROWS|RANGE [BETWEEN] start [AND end].
func (b *Binder) frame(spec *lang.WindowSpec, f *logical.WindowFunc) (logical.Frame, bool) {
	fr := spec.Frame
	out := logical.Frame{Unit: logical.FrameRows}
	if fr.Unit == lang.FrameRange {
		out.Unit = logical.FrameRange
	}
	switch {
	case fr.Between && fr.End == nil:
		b.errorf(fr.Pos, ErrBind, "%s BETWEEN needs AND and the frame's end", fr.Unit)
		return out, false
	case !fr.Between && fr.End != nil:
		b.errorf(fr.Pos, ErrBind, "a frame with two bounds is written %s BETWEEN start AND end", fr.Unit)
		return out, false
	}
	ok := true
	out.Start, ok = b.frameBound(fr.Start, fr.Unit, f, true)
	if !ok {
		return out, false
	}
	out.End = logical.FrameBound{Kind: logical.CurrentRow}
	if fr.End != nil {
		if out.End, ok = b.frameBound(fr.End, fr.Unit, f, false); !ok {
			return out, false
		}
	} else if out.Start.Kind == logical.OffsetFollowing {
		b.errorf(fr.Start.Pos, ErrBind, "a frame cannot start after its end: %s %s alone means BETWEEN it AND CURRENT ROW; write BETWEEN", fr.Unit, lang.Print(fr.Start.Offset)+" FOLLOWING")
		return out, false
	}
	return out, true
}

func (b *Binder) frameBound(fb *lang.FrameBound, unit lang.FrameUnit, f *logical.WindowFunc, start bool) (logical.FrameBound, bool) {
	var out logical.FrameBound
	switch {
	case fb.Current:
		if fb.Dir != "" {
			b.errorf(fb.Pos, ErrBind, "CURRENT ROW takes no %s", fb.Dir)
			return out, false
		}
		out.Kind = logical.CurrentRow
		return out, true
	case fb.Dir == "":
		b.errorf(fb.Pos, ErrBind, "a frame bound needs PRECEDING or FOLLOWING")
		return out, false
	case fb.Unbounded:
		out.Kind = logical.UnboundedPreceding
		if fb.Dir == lang.Following {
			out.Kind = logical.UnboundedFollowing
		}
		if start && out.Kind == logical.UnboundedFollowing || !start && out.Kind == logical.UnboundedPreceding {
			which := map[bool]string{true: "start", false: "end"}[start]
			b.errorf(fb.Pos, ErrBind, "a frame cannot %s at UNBOUNDED %s", which, fb.Dir)
			return out, false
		}
		return out, true
	}
	out.Kind = logical.OffsetPreceding
	if fb.Dir == lang.Following {
		out.Kind = logical.OffsetFollowing
	}
	if unit == lang.FrameRows {
		n, isNum := fb.Offset.(*lang.NumberLit)
		var v int64
		var err error
		if isNum {
			v, err = n.Int64()
		}
		if !isNum || err != nil || v < 0 {
			b.errorf(fb.Offset.Position(), ErrBind, "a ROWS frame offset is a non-negative integer, got %s", lang.Print(fb.Offset))
			return out, false
		}
		out.Offset = float64(v)
		return out, true
	}
	// RANGE n PRECEDING: a distance in the value of the one ORDER BY key.
	if len(f.Order) != 1 {
		b.errorf(fb.Pos, ErrBind, "a RANGE frame with an offset needs exactly one ORDER BY key, got %d", len(f.Order))
		return out, false
	}
	key := f.Order[0].Expr.Type()
	switch v := fb.Offset.(type) {
	case *lang.IntervalLit:
		sec, err := v.Seconds()
		if err != nil || sec < 0 || !arrow.TypeEqual(key, expr.Timestamp) {
			b.errorf(v.Pos, ErrBind, "a RANGE frame offset of INTERVAL needs a TIMESTAMP ORDER BY key (got %s) and a non-negative interval", expr.TypeName(key))
			return out, false
		}
		out.Offset, out.Time = float64(time.Duration(sec*float64(time.Second))/time.Microsecond), true
		return out, true
	case *lang.NumberLit:
		x, err := v.Float64()
		if err != nil || x < 0 || !expr.IsNumeric(key) {
			b.errorf(v.Pos, ErrBind, "a RANGE frame offset of a number needs a numeric ORDER BY key (got %s) and a non-negative number", expr.TypeName(key))
			return out, false
		}
		out.Offset = x
		return out, true
	}
	b.errorf(fb.Offset.Position(), ErrBind, "a RANGE frame offset is a number or an INTERVAL literal, got %s", lang.Print(fb.Offset))
	return out, false
}

// placeWindows puts the block's window operator over in (when it has
// window functions) and moves their result columns in exprs from winBase to
// right after in's columns.
func (b *Binder) placeWindows(ws *winScope, in logical.Node, exprs []expr.Expr, pos logical.Pos) logical.Node {
	if ws == nil || len(ws.funcs) == 0 {
		return in
	}
	width := len(in.Schema().Fields())
	for i, e := range exprs {
		exprs[i] = expr.Transform(e, func(x expr.Expr) expr.Expr {
			if c, ok := x.(*expr.Column); ok && c.Index >= winBase {
				return &expr.Column{Index: c.Index - winBase + width, Name: c.Name, DataType: c.DataType}
			}
			return x
		})
	}
	names := make([]string, len(ws.funcs))
	for i := range names {
		names[i] = fmt.Sprintf("win%d", i)
	}
	return logical.NewWindowFuncs(in, ws.funcs, names, pos)
}
