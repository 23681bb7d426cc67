package lang

import (
	"strings"

	"github.com/alecthomas/participle/v2/lexer"
)

// Over is the OVER clause of a window function call: f(args) OVER (PARTITION
// BY ... ORDER BY ... frame), or OVER name for a window of the SELECT's
// WINDOW clause. OVER is a contextual word, so a column may still be called
// "over": the clause is OVER followed by "(" or a name.
type Over struct {
	Pos  lexer.Position
	Name string      `parser:"'OVER' ( @( Ident | QIdent )"`
	Spec *WindowSpec `parser:"| '(' @@ ')' )"`
}

// WindowDef is one name AS (spec) of a SELECT's WINDOW clause. WINDOW is a
// contextual word: a table alias is not taken for it before name AS.
type WindowDef struct {
	Pos  lexer.Position
	Name string      `parser:"@( Ident | QIdent ) 'AS'"`
	Spec *WindowSpec `parser:"'(' @@ ')'"`
}

// WindowSpec is the inside of OVER (...): PARTITION BY, ORDER BY and a
// frame, each optional.
type WindowSpec struct {
	Pos         lexer.Position
	PartitionBy []Expr       `parser:"( 'PARTITION' 'BY' @@ ( ',' @@ )* )?"`
	OrderBy     []*OrderItem `parser:"( 'ORDER' 'BY' @@ ( ',' @@ )* )?"`
	Frame       *Frame       `parser:"@@?"`
}

// Frame is ROWS|RANGE [BETWEEN] Start [AND End]. The grammar accepts BETWEEN
// and AND independently so that the binder can say which one is missing; a
// frame without BETWEEN has End nil (it ends at the current row).
type Frame struct {
	Pos     lexer.Position
	Unit    FrameUnit   `parser:"@( 'ROWS' | 'RANGE' )"`
	Between bool        `parser:"@'BETWEEN'?"`
	Start   *FrameBound `parser:"@@"`
	End     *FrameBound `parser:"( 'AND' @@ )?"`
}

// FrameBound is UNBOUNDED PRECEDING|FOLLOWING, CURRENT ROW, or Offset
// PRECEDING|FOLLOWING (a number of rows, or for RANGE a number or an
// INTERVAL). Which combinations make sense is the binder's to check.
type FrameBound struct {
	Pos       lexer.Position
	Unbounded bool     `parser:"(  @'UNBOUNDED'"`
	Current   bool     `parser:"  | @'CURRENT' 'ROW'"`
	Offset    Expr     `parser:"  | @@ )"`
	Dir       FrameDir `parser:"@( 'PRECEDING' | 'FOLLOWING' )?"`
}

// FrameUnit is ROWS or RANGE.
type FrameUnit string

// Frame units.
const (
	FrameRows  FrameUnit = "ROWS"
	FrameRange FrameUnit = "RANGE"
)

// Capture implements participle.Capture.
func (u *FrameUnit) Capture(v []string) error { *u = FrameUnit(capWord(v)); return nil }

// FrameDir is PRECEDING or FOLLOWING ("" after CURRENT ROW).
type FrameDir string

// Frame directions.
const (
	Preceding FrameDir = "PRECEDING"
	Following FrameDir = "FOLLOWING"
)

// Capture implements participle.Capture.
func (d *FrameDir) Capture(v []string) error { *d = FrameDir(capWord(v)); return nil }

func (n *Over) Position() lexer.Position       { return n.Pos }
func (n *WindowSpec) Position() lexer.Position { return n.Pos }
func (n *Frame) Position() lexer.Position      { return n.Pos }
func (n *FrameBound) Position() lexer.Position { return n.Pos }
func (n *WindowDef) Position() lexer.Position  { return n.Pos }

// over writes " OVER ..." after a call.
func (p *printer) over(o *Over) {
	if o.Spec == nil {
		p.w(" OVER ", quoteIdent(o.Name))
		return
	}
	p.w(" OVER (")
	p.windowSpec(o.Spec)
	p.w(")")
}

// windowDefs writes a SELECT's WINDOW clause.
func (p *printer) windowDefs(ds []*WindowDef) {
	for i, d := range ds {
		if i == 0 {
			p.nl("WINDOW ")
		} else {
			p.w(", ")
		}
		p.w(quoteIdent(d.Name), " AS (")
		p.windowSpec(d.Spec)
		p.w(")")
	}
}

func (p *printer) windowSpec(s *WindowSpec) {
	first := true
	sep := func() {
		if !first {
			p.w(" ")
		}
		first = false
	}
	if len(s.PartitionBy) > 0 {
		sep()
		p.w("PARTITION BY ")
		for i, e := range s.PartitionBy {
			if i > 0 {
				p.w(", ")
			}
			p.expr(e, 0)
		}
	}
	if len(s.OrderBy) > 0 {
		sep()
		p.w("ORDER BY ")
		for i, o := range s.OrderBy {
			if i > 0 {
				p.w(", ")
			}
			p.node(o)
		}
	}
	if f := s.Frame; f != nil {
		sep()
		p.w(string(f.Unit), " ")
		if f.End != nil {
			p.w("BETWEEN ")
		}
		p.frameBound(f.Start)
		if f.End != nil {
			p.w(" AND ")
			p.frameBound(f.End)
		}
	}
}

func (p *printer) frameBound(b *FrameBound) {
	switch {
	case b.Unbounded:
		p.w("UNBOUNDED")
	case b.Current:
		p.w("CURRENT ROW")
	default:
		p.expr(b.Offset, 0)
	}
	if b.Dir != "" {
		p.w(" ", strings.ToUpper(string(b.Dir)))
	}
}
