package logical

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/planner/expr"
)

// ---- WindowFuncs ----

// FrameUnit is ROWS or RANGE.
type FrameUnit int

// Frame units.
const (
	FrameRange FrameUnit = iota // the SQL default
	FrameRows
)

func (u FrameUnit) String() string { return [...]string{"RANGE", "ROWS"}[u] }

// BoundKind is where one end of a frame lies.
type BoundKind int

// Frame bound kinds.
const (
	UnboundedPreceding BoundKind = iota
	OffsetPreceding
	CurrentRow
	OffsetFollowing
	UnboundedFollowing
)

// FrameBound is one end of a frame. Offset is a number of rows (ROWS), or a
// distance in the ORDER BY key's unit (RANGE: microseconds for a TIMESTAMP key).
type FrameBound struct {
	Kind   BoundKind
	Offset float64
	// Time: Offset is microseconds of a TIMESTAMP key (an INTERVAL).
	Time bool
}

func (b FrameBound) String() string {
	off := fmt.Sprintf("%g", b.Offset)
	if b.Time {
		off = "INTERVAL " + (time.Duration(b.Offset) * time.Microsecond).String()
	}
	switch b.Kind {
	case UnboundedPreceding:
		return "UNBOUNDED PRECEDING"
	case OffsetPreceding:
		return off + " PRECEDING"
	case CurrentRow:
		return "CURRENT ROW"
	case OffsetFollowing:
		return off + " FOLLOWING"
	}
	return "UNBOUNDED FOLLOWING"
}

// Frame is the rows around the current row that a window aggregate, or
// first_value, last_value and nth_value, read.
type Frame struct {
	Unit       FrameUnit
	Start, End FrameBound
}

// DefaultFrame is DuckDB's (and SQL's): from the partition's start to the
// current row's last peer. Without ORDER BY every row is a peer, so it is the
// whole partition.
var DefaultFrame = Frame{Unit: FrameRange, Start: FrameBound{Kind: UnboundedPreceding}, End: FrameBound{Kind: CurrentRow}}

func (f Frame) String() string { return fmt.Sprintf("%s BETWEEN %s AND %s", f.Unit, f.Start, f.End) }

// Growing reports whether every frame starts at its partition's start (a
// running aggregate serves it).
func (f Frame) Growing() bool { return f.Start.Kind == UnboundedPreceding }

// WindowKey is one ORDER BY key of a window. NULLs sort last in either
// direction (DuckDB's default) unless NullsFirst.
type WindowKey struct {
	Expr       expr.Expr
	Desc       bool
	NullsFirst bool
}

// WindowFunc is one window function call: Func over Args, per partition, in
// Order, over Frame. Func is a ranking or value function (row_number, rank,
// dense_rank, percent_rank, cume_dist, ntile, lag, lead, first_value,
// last_value, nth_value) or any aggregate (count with no Args is count(*);
// an aggregate's constant arguments after the first are its parameters).
type WindowFunc struct {
	Func      string
	Args      []expr.Expr
	Distinct  bool // count(DISTINCT x) OVER (...)
	Partition []expr.Expr
	Order     []WindowKey
	Frame     Frame
	DataType  arrow.DataType
	Pos       Pos
}

func (w *WindowFunc) String() string {
	var b strings.Builder
	b.WriteString(w.Func + "(")
	if w.Distinct {
		b.WriteString("DISTINCT ")
	}
	for i, a := range w.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.String())
	}
	if w.Func == "count" && len(w.Args) == 0 {
		b.WriteString("*")
	}
	b.WriteString(") OVER (")
	var parts []string
	if len(w.Partition) > 0 {
		ps := make([]string, len(w.Partition))
		for i, p := range w.Partition {
			ps[i] = p.String()
		}
		parts = append(parts, "PARTITION BY "+strings.Join(ps, ", "))
	}
	if len(w.Order) > 0 {
		os := make([]string, len(w.Order))
		for i, o := range w.Order {
			os[i] = o.Expr.String()
			if o.Desc {
				os[i] += " DESC"
			}
			if o.NullsFirst {
				os[i] += " NULLS FIRST"
			}
		}
		parts = append(parts, "ORDER BY "+strings.Join(os, ", "))
	}
	if w.Frame != DefaultFrame {
		parts = append(parts, w.Frame.String())
	}
	b.WriteString(strings.Join(parts, " ") + ")")
	return b.String()
}

// Exprs are every expression the call reads from its input.
func (w *WindowFunc) Exprs() []expr.Expr {
	out := append([]expr.Expr(nil), w.Args...)
	out = append(out, w.Partition...)
	for _, o := range w.Order {
		out = append(out, o.Expr)
	}
	return out
}

// WindowFuncs computes the window functions of a SELECT (DuckDB's window
// operator): it sits between the FROM, WHERE, GROUP BY and HAVING rows and
// the projection, and its output is its input's columns, then one column per
// function (win0, win1, ...).
type WindowFuncs struct {
	Input  Node
	Funcs  []*WindowFunc
	Names  []string
	schema *arrow.Schema
	Pos    Pos
}

// NewWindowFuncs builds the window operator.
func NewWindowFuncs(in Node, funcs []*WindowFunc, names []string, pos Pos) *WindowFuncs {
	fs := append([]arrow.Field(nil), in.Schema().Fields()...)
	for i, f := range funcs {
		fs = append(fs, arrow.Field{Name: names[i], Type: f.DataType, Nullable: true})
	}
	return &WindowFuncs{Input: in, Funcs: funcs, Names: names, schema: arrow.NewSchema(fs, nil), Pos: pos}
}

func (w *WindowFuncs) Schema() *arrow.Schema { return w.schema }
func (w *WindowFuncs) Children() []Node      { return []Node{w.Input} }
func (w *WindowFuncs) WithChildren(ch ...Node) Node {
	mustLen("WindowFuncs", len(ch), 1)
	return NewWindowFuncs(ch[0], w.Funcs, w.Names, w.Pos)
}
func (w *WindowFuncs) Position() Pos { return w.Pos }
func (w *WindowFuncs) Describe() string {
	fs := make([]string, len(w.Funcs))
	for i, f := range w.Funcs {
		fs[i] = f.String() + " AS " + w.Names[i]
	}
	return "Window " + strings.Join(fs, ", ")
}
