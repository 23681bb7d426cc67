package lang

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"
)

// Expr is an expression. The concrete types are *BinaryExpr, *UnaryExpr,
// *IsNullExpr, *DistinctFromExpr, *BetweenExpr, *InExpr, *LikeExpr, *CaseExpr, *CastExpr,
// *FuncCall, *ColumnRef, *FieldAccess, *IndexExpr and the literals *NumberLit,
// *StringLit, *BoolLit, *NullLit, *IntervalLit, *TimestampLit. Parentheses
// leave no node: the tree's shape is the grouping.
type Expr interface {
	Node
	exprNode()
}

// Literal is a constant: *NumberLit, *StringLit, *BoolLit or *NullLit (the
// values of SET and of WITH (k = v) options).
type Literal interface {
	Expr
	literalNode()
}

// BinaryExpr is Left Op Right: OR, AND, comparisons, arithmetic and ||. Pos is
// Left's position; OpPos the operator's.
type BinaryExpr struct {
	Pos         lexer.Position
	OpPos       lexer.Position
	Op          BinaryOp
	Left, Right Expr
}

// UnaryExpr is NOT X or -X.
type UnaryExpr struct {
	Pos lexer.Position
	Op  UnaryOp
	X   Expr
}

// IsNullExpr is X IS [NOT] NULL.
type IsNullExpr struct {
	Pos lexer.Position
	X   Expr
	Not bool
}

// DistinctFromExpr is X IS [NOT] DISTINCT FROM Y: <> (=) where NULL is a
// value like any other, so never NULL itself.
type DistinctFromExpr struct {
	Pos lexer.Position
	X   Expr
	Not bool
	Y   Expr
}

// BetweenExpr is X [NOT] BETWEEN Low AND High.
type BetweenExpr struct {
	Pos       lexer.Position
	X         Expr
	Not       bool
	Low, High Expr
}

// InExpr is X [NOT] IN (List...) or X [NOT] IN (Subquery).
type InExpr struct {
	Pos      lexer.Position
	X        Expr
	Not      bool
	List     []Expr
	Subquery *Query
}

// SubqueryExpr is (SELECT ...) used as a value: one column, at most one row.
type SubqueryExpr struct {
	Pos   lexer.Position
	Query *Query `parser:"'(' @@ ')'"`
}

// ExistsExpr is EXISTS (SELECT ...): whether the query has a row.
type ExistsExpr struct {
	Pos   lexer.Position
	Query *Query `parser:"'EXISTS' '(' @@ ')'"`
}

// LikeExpr is X [NOT] LIKE Pattern, or ILIKE (ILike: case-insensitive).
type LikeExpr struct {
	Pos     lexer.Position
	X       Expr
	Not     bool
	ILike   bool
	Pattern Expr
}

// FieldAccess is X.Field where X is not a plain name (f(x).label, a[0].x);
// dotted names are a ColumnRef.
type FieldAccess struct {
	Pos   lexer.Position
	X     Expr
	Field string
}

// IndexExpr is X[Index].
type IndexExpr struct {
	Pos   lexer.Position
	X     Expr
	Index Expr
}

// CaseExpr is CASE [Operand] WHEN ... THEN ... [ELSE ...] END.
type CaseExpr struct {
	Pos     lexer.Position
	Operand Expr          `parser:"'CASE' @@?"`
	Whens   []*WhenClause `parser:"@@+"`
	Else    Expr          `parser:"( 'ELSE' @@ )? 'END'"`
}

// WhenClause is WHEN Cond THEN Result.
type WhenClause struct {
	Pos    lexer.Position
	Cond   Expr `parser:"'WHEN' @@"`
	Result Expr `parser:"'THEN' @@"`
}

// CastExpr is CAST(X AS Type), X::Type, or TRY_CAST(X AS Type) (Try: a
// value that does not convert is NULL instead of an error).
type CastExpr struct {
	Pos  lexer.Position
	Try  bool  `parser:"( @'TRY_CAST' | 'CAST' ) '('"`
	X    Expr  `parser:"@@"`
	Type *Type `parser:"'AS' @@ ')'"`
}

// FuncCall is Name(Args...), Name(*) (Star) or Name(DISTINCT Args...), with
// Over set for a window function call (rank() OVER (...)). Window functions
// of GROUP BY (TUMBLE, HOP, SESSION) and model calls of LATERAL are FuncCalls
// too: the binder decides what a name means. LEFT and RIGHT, reserved for
// joins, are function names too (left(s, 2)), as in DuckDB: a join keyword
// is never followed by "(".
type FuncCall struct {
	Pos      lexer.Position
	Name     string `parser:"@( Ident | QIdent | 'LEFT' | 'RIGHT' ) '('"`
	Star     bool   `parser:"( @'*'"`
	Distinct bool   `parser:"| @'DISTINCT'"`
	Args     []Expr `parser:"  @@ ( ',' @@ )* | @@ ( ',' @@ )* )?"`
	// OrderBy is an aggregate's own order: string_agg(s, ',' ORDER BY t).
	OrderBy []*OrderItem `parser:"( 'ORDER' 'BY' @@ ( ',' @@ )* )? ')'"`
	// WithinGroup is the ordered-set aggregate's WITHIN GROUP (ORDER BY x):
	// percentile_cont(0.5) WITHIN GROUP (ORDER BY x).
	WithinGroup *OrderItem `parser:"( 'WITHIN' 'GROUP' '(' 'ORDER' 'BY' @@ ')' )?"`
	// Filter is an aggregate's FILTER (WHERE cond): only rows where cond is
	// TRUE are aggregated.
	Filter Expr  `parser:"( (?= 'FILTER' '(' ) 'FILTER' '(' 'WHERE' @@ ')' )?"`
	Over   *Over `parser:"( (?= 'OVER' ( '(' | Ident | QIdent ) ) @@ )?"`
}

// ColumnRef is a possibly dotted name: col, t.col, t.col.field. The binder
// decides which prefix names a relation. After a dot any keyword is a name
// (t.offset), as in DuckDB.
type ColumnRef struct {
	Pos   lexer.Position
	Names []string `parser:"@( Ident | QIdent ) ( '.' @( Ident | QIdent | Keyword ) )*"`
}

// NumberLit is a numeric literal, kept as written.
type NumberLit struct {
	Pos   lexer.Position
	Value string `parser:"@( Float | Int )"`
}

// Float64 is the literal's value.
func (n *NumberLit) Float64() (float64, error) { return strconv.ParseFloat(n.Value, 64) }

// Int64 is the literal's value if it is an integer.
func (n *NumberLit) Int64() (int64, error) { return strconv.ParseInt(n.Value, 10, 64) }

// StringLit is a string literal; Value is unquoted.
type StringLit struct {
	Pos   lexer.Position
	Value string `parser:"@String"`
}

// BoolLit is TRUE or FALSE.
type BoolLit struct {
	Pos   lexer.Position
	Value bool `parser:"( @'TRUE' | 'FALSE' )"`
}

// NullLit is NULL.
type NullLit struct {
	Pos  lexer.Position
	Null bool `parser:"@'NULL'"`
}

// IntervalLit is INTERVAL 'n' unit, INTERVAL n unit, or INTERVAL 'n unit
// [n unit ...]' (Unit empty), as DuckDB writes them. Units are fixed (ms to
// week) or calendar (month, year): INTERVAL '3' MONTH added to a date moves
// it three months on the calendar.
type IntervalLit struct {
	Pos   lexer.Position
	Value string   `parser:"'INTERVAL' @( String | Int | Float )"`
	Unit  TimeUnit `parser:"@( 'MS' | 'MILLISECOND' | 'MILLISECONDS' | 'SECOND' | 'SECONDS' | 'MINUTE' | 'MINUTES' | 'HOUR' | 'HOURS' | 'DAY' | 'DAYS' | 'WEEK' | 'WEEKS' | 'MONTH' | 'MONTHS' | 'YEAR' | 'YEARS' )?"`
}

// ErrInterval is an interval whose text is not n unit pairs.
var ErrInterval = errors.New("want INTERVAL 'n unit' with unit ms, second, minute, hour, day, week, month or year")

// ErrCalendarInterval is a calendar interval where a fixed length is needed
// (a window's size): a month has no one length.
var ErrCalendarInterval = errors.New("an interval of months or years has no fixed length")

// Parts is the interval as whole calendar months and a fixed length in
// seconds: INTERVAL '1 year 2 days' is 12 months and 172800 seconds. A
// month count must be whole.
func (n *IntervalLit) Parts() (months int64, seconds float64, err error) {
	add := func(v float64, u TimeUnit) error {
		if m := u.Months(); m != 0 {
			if v != float64(int64(v)) {
				return fmt.Errorf("%w: %v %s is not a whole number of months", ErrInterval, v, strings.ToLower(string(u)))
			}
			months += int64(v) * m
			return nil
		}
		if u.Seconds() == 0 {
			return ErrInterval
		}
		seconds += v * u.Seconds()
		return nil
	}
	if n.Unit != "" {
		v, err := strconv.ParseFloat(n.Value, 64)
		if err != nil {
			return 0, 0, ErrInterval
		}
		return months, seconds, add(v, n.Unit)
	}
	f := strings.Fields(n.Value)
	if len(f) == 0 || len(f)%2 != 0 {
		return 0, 0, ErrInterval
	}
	for i := 0; i < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		var u TimeUnit
		_ = u.Capture([]string{f[i+1]})
		if err != nil {
			return 0, 0, ErrInterval
		}
		if err := add(v, u); err != nil {
			return 0, 0, err
		}
	}
	return months, seconds, nil
}

// Seconds is the interval's length in seconds; a calendar interval has
// none (ErrCalendarInterval).
func (n *IntervalLit) Seconds() (float64, error) {
	months, secs, err := n.Parts()
	if err == nil && months != 0 {
		err = ErrCalendarInterval
	}
	return secs, err
}

// TimestampLit is TIMESTAMP '...'; Value is the unquoted text.
type TimestampLit struct {
	Pos   lexer.Position
	Value string `parser:"'TIMESTAMP' @String"`
}

func (*BinaryExpr) exprNode()       {}
func (*UnaryExpr) exprNode()        {}
func (*IsNullExpr) exprNode()       {}
func (*SubqueryExpr) exprNode()     {}
func (*ExistsExpr) exprNode()       {}
func (*DistinctFromExpr) exprNode() {}
func (*BetweenExpr) exprNode()      {}
func (*InExpr) exprNode()           {}
func (*LikeExpr) exprNode()         {}
func (*FieldAccess) exprNode()      {}
func (*IndexExpr) exprNode()        {}
func (*CaseExpr) exprNode()         {}
func (*CastExpr) exprNode()         {}
func (*FuncCall) exprNode()         {}
func (*ColumnRef) exprNode()        {}
func (*NumberLit) exprNode()        {}
func (*StringLit) exprNode()        {}
func (*BoolLit) exprNode()          {}
func (*NullLit) exprNode()          {}
func (*IntervalLit) exprNode()      {}
func (*TimestampLit) exprNode()     {}

func (*NumberLit) literalNode() {}
func (*StringLit) literalNode() {}
func (*BoolLit) literalNode()   {}
func (*NullLit) literalNode()   {}

// Position implementations.
func (n *BinaryExpr) Position() lexer.Position       { return n.Pos }
func (n *UnaryExpr) Position() lexer.Position        { return n.Pos }
func (n *IsNullExpr) Position() lexer.Position       { return n.Pos }
func (n *SubqueryExpr) Position() lexer.Position     { return n.Pos }
func (n *ExistsExpr) Position() lexer.Position       { return n.Pos }
func (n *DistinctFromExpr) Position() lexer.Position { return n.Pos }
func (n *BetweenExpr) Position() lexer.Position      { return n.Pos }
func (n *InExpr) Position() lexer.Position           { return n.Pos }
func (n *LikeExpr) Position() lexer.Position         { return n.Pos }
func (n *FieldAccess) Position() lexer.Position      { return n.Pos }
func (n *IndexExpr) Position() lexer.Position        { return n.Pos }
func (n *CaseExpr) Position() lexer.Position         { return n.Pos }
func (n *WhenClause) Position() lexer.Position       { return n.Pos }
func (n *CastExpr) Position() lexer.Position         { return n.Pos }
func (n *FuncCall) Position() lexer.Position         { return n.Pos }
func (n *ColumnRef) Position() lexer.Position        { return n.Pos }
func (n *NumberLit) Position() lexer.Position        { return n.Pos }
func (n *StringLit) Position() lexer.Position        { return n.Pos }
func (n *BoolLit) Position() lexer.Position          { return n.Pos }
func (n *NullLit) Position() lexer.Position          { return n.Pos }
func (n *IntervalLit) Position() lexer.Position      { return n.Pos }
func (n *TimestampLit) Position() lexer.Position     { return n.Pos }

// Args0String is the call's first argument when it is a string literal
// (date_part('year', t)).
func (n *FuncCall) Args0String() (string, bool) {
	if len(n.Args) == 0 {
		return "", false
	}
	s, ok := n.Args[0].(*StringLit)
	if !ok {
		return "", false
	}
	return s.Value, true
}
