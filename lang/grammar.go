package lang

import (
	"strings"

	"github.com/alecthomas/participle/v2/lexer"
)

// The expression grammar has one production per precedence level, from OR
// (loosest) to postfix . and [] (tightest). Those level structs are grammar
// only: right after parsing, lower() folds each of them into the public nodes
// (BinaryExpr, UnaryExpr, ...), so the AST has no trace of the levels.
//
//	OR < AND < NOT < comparison, IS, BETWEEN, IN, LIKE < + - || < * / % < unary - < . [] ::

// grammarExpr is a level struct; it sits in an Expr field until lowered.
type grammarExpr interface {
	Expr
	lower() Expr
}

type orExpr struct {
	Pos   lexer.Position
	Left  *andExpr  `parser:"@@"`
	Right []*orTail `parser:"@@*"`
}

type orTail struct {
	Pos   lexer.Position
	Right *andExpr `parser:"'OR' @@"`
}

type andExpr struct {
	Pos   lexer.Position
	Left  *notExpr   `parser:"@@"`
	Right []*andTail `parser:"@@*"`
}

type andTail struct {
	Pos   lexer.Position
	Right *notExpr `parser:"'AND' @@"`
}

type notExpr struct {
	Pos  lexer.Position
	Not  *notExpr   `parser:"  'NOT' @@"`
	Pred *predicate `parser:"| @@"`
}

type predicate struct {
	Pos   lexer.Position
	Left  *additive   `parser:"@@"`
	Tails []*predTail `parser:"@@*"`
}

type predTail struct {
	Pos     lexer.Position
	Cmp     *cmpTail     `parser:"  @@"`
	IsNull  *isNullTail  `parser:"| @@"`
	Between *betweenTail `parser:"| @@"`
	In      *inTail      `parser:"| @@"`
	Like    *likeTail    `parser:"| @@"`
}

type cmpTail struct {
	Pos   lexer.Position
	Op    BinaryOp  `parser:"@( '=' | '<>' | '!=' | '<=' | '>=' | '<' | '>' )"`
	Right *additive `parser:"@@"`
}

// isNullTail is IS [NOT] NULL or IS [NOT] DISTINCT FROM y: one production,
// since the two part only at their third token.
type isNullTail struct {
	Pos      lexer.Position
	Not      bool      `parser:"'IS' @'NOT'?"`
	Null     bool      `parser:"( @'NULL'"`
	Distinct *additive `parser:"| 'DISTINCT' 'FROM' @@ )"`
}

type betweenTail struct {
	Pos  lexer.Position
	Not  bool      `parser:"( @'NOT' 'BETWEEN' | 'BETWEEN' )"`
	Low  *additive `parser:"@@"`
	High *additive `parser:"'AND' @@"`
}

type inTail struct {
	Pos      lexer.Position
	Not      bool      `parser:"( @'NOT' 'IN' | 'IN' ) '('"`
	Subquery *Query    `parser:"( @@"`
	List     []*orExpr `parser:"| @@ ( ',' @@ )* ) ')'"`
}

// likeTail's Op holds the keywords as written, run together ("NOTILIKE").
type likeTail struct {
	Pos     lexer.Position
	Op      string    `parser:"@( 'NOT' 'LIKE' | 'NOT' 'ILIKE' | 'LIKE' | 'ILIKE' )"`
	Pattern *additive `parser:"@@"`
}

type additive struct {
	Pos   lexer.Position
	Left  *multiplicative `parser:"@@"`
	Right []*addTail      `parser:"@@*"`
}

type addTail struct {
	Pos   lexer.Position
	Op    BinaryOp        `parser:"@( '+' | '-' | '||' )"`
	Right *multiplicative `parser:"@@"`
}

type multiplicative struct {
	Pos   lexer.Position
	Left  *unary     `parser:"@@"`
	Right []*mulTail `parser:"@@*"`
}

type mulTail struct {
	Pos   lexer.Position
	Op    BinaryOp `parser:"@( '*' | '//' | '/' | '%' )"`
	Right *unary   `parser:"@@"`
}

type unary struct {
	Pos     lexer.Position
	Neg     *unary   `parser:"  '-' @@"`
	Postfix *postfix `parser:"| @@"`
}

type postfix struct {
	Pos lexer.Position
	X   *primary     `parser:"@@"`
	Ops []*postfixOp `parser:"@@*"`
}

// postfixOp is .field, [index], or ::type (PostgreSQL's and DuckDB's cast,
// tighter than unary minus: -x::INT is -(CAST(x AS INT))).
type postfixOp struct {
	Pos   lexer.Position
	Field string  `parser:"  '.' @( Ident | QIdent )"`
	Index *orExpr `parser:"| '[' @@ ']'"`
	Cast  *Type   `parser:"| '::' @@"`
}

// primary tries the forms that start with a keyword before names, and a call
// (name followed by "(") before a plain name.
type primary struct {
	Pos       lexer.Position
	Case      *CaseExpr     `parser:"  @@"`
	Cast      *CastExpr     `parser:"| @@"`
	Extract   *extract      `parser:"| @@"`
	Position  *position     `parser:"| @@"`
	Substring *substring    `parser:"| @@"`
	Date      *dateLit      `parser:"| @@"`
	Interval  *IntervalLit  `parser:"| @@"`
	Timestamp *TimestampLit `parser:"| @@"`
	Bool      *BoolLit      `parser:"| @@"`
	Null      *NullLit      `parser:"| @@"`
	Number    *NumberLit    `parser:"| @@"`
	String    *StringLit    `parser:"| @@"`
	Exists    *ExistsExpr   `parser:"| @@"`
	Call      *FuncCall     `parser:"| @@"`
	Column    *ColumnRef    `parser:"| @@"`
	Paren     *orExpr       `parser:"| '(' @@ ')'"`
	Subquery  *SubqueryExpr `parser:"| @@"`
}

// extract is EXTRACT(field FROM x), which is date_part('field', x): the
// grammar keeps the SQL standard's spelling, the AST the call.
type extract struct {
	Pos   lexer.Position
	Field string  `parser:"'EXTRACT' '(' @( Ident | QIdent )"`
	X     *orExpr `parser:"'FROM' @@ ')'"`
}

// dateLit is DATE 'YYYY-MM-DD', which is CAST('YYYY-MM-DD' AS DATE).
type dateLit struct {
	Pos   lexer.Position
	Value string `parser:"'DATE' @String"`
}

func (e *dateLit) lower() Expr {
	return &CastExpr{Pos: e.Pos, X: &StringLit{Pos: e.Pos, Value: e.Value}, Type: &Type{Pos: e.Pos, Name: TypeDate}}
}

// position is POSITION(sub IN s), which is strpos(s, sub).
type position struct {
	Pos lexer.Position
	Sub *additive `parser:"'POSITION' '(' @@"`
	S   *additive `parser:"'IN' @@ ')'"`
}

func (e *position) lower() Expr {
	return &FuncCall{Pos: e.Pos, Name: "strpos", Args: []Expr{e.S.lower(), e.Sub.lower()}}
}

// substring is SUBSTRING(s FROM start [FOR length]), the SQL standard's
// spelling of substring(s, start[, length]), which it also accepts.
type substring struct {
	Pos  lexer.Position
	S    *orExpr   `parser:"'SUBSTRING' '(' @@"`
	From *orExpr   `parser:"( 'FROM' @@"`
	For  *orExpr   `parser:"  ( 'FOR' @@ )?"`
	Args []*orExpr `parser:"| ( ',' @@ )+ )? ')'"`
}

func (e *substring) lower() Expr {
	args := []Expr{e.S.lower()}
	if e.From != nil {
		args = append(args, e.From.lower())
		if e.For != nil {
			args = append(args, e.For.lower())
		}
	}
	for _, a := range e.Args {
		args = append(args, a.lower())
	}
	return &FuncCall{Pos: e.Pos, Name: "substring", Args: args}
}

func (e *extract) lower() Expr {
	return &FuncCall{Pos: e.Pos, Name: "date_part", Args: []Expr{&StringLit{Pos: e.Pos, Value: strings.ToLower(e.Field)}, e.X.lower()}}
}

func (*orExpr) exprNode() {}

func (e *orExpr) Position() lexer.Position { return e.Pos }

func (e *orExpr) lower() Expr {
	x := e.Left.lower()
	for _, t := range e.Right {
		x = &BinaryExpr{Pos: x.Position(), OpPos: t.Pos, Op: OpOr, Left: x, Right: t.Right.lower()}
	}
	return x
}

func (e *andExpr) lower() Expr {
	x := e.Left.lower()
	for _, t := range e.Right {
		x = &BinaryExpr{Pos: x.Position(), OpPos: t.Pos, Op: OpAnd, Left: x, Right: t.Right.lower()}
	}
	return x
}

func (e *notExpr) lower() Expr {
	if e.Not != nil {
		return &UnaryExpr{Pos: e.Pos, Op: OpNot, X: e.Not.lower()}
	}
	return e.Pred.lower()
}

func (e *predicate) lower() Expr {
	x := e.Left.lower()
	for _, t := range e.Tails {
		switch {
		case t.Cmp != nil:
			x = &BinaryExpr{Pos: x.Position(), OpPos: t.Pos, Op: t.Cmp.Op, Left: x, Right: t.Cmp.Right.lower()}
		case t.IsNull != nil && t.IsNull.Distinct != nil:
			x = &DistinctFromExpr{Pos: x.Position(), X: x, Not: t.IsNull.Not, Y: t.IsNull.Distinct.lower()}
		case t.IsNull != nil:
			x = &IsNullExpr{Pos: x.Position(), X: x, Not: t.IsNull.Not}
		case t.Between != nil:
			x = &BetweenExpr{Pos: x.Position(), X: x, Not: t.Between.Not, Low: t.Between.Low.lower(), High: t.Between.High.lower()}
		case t.In != nil:
			in := &InExpr{Pos: x.Position(), X: x, Not: t.In.Not, Subquery: t.In.Subquery}
			for _, e := range t.In.List {
				in.List = append(in.List, e.lower())
			}
			x = in
		case t.Like != nil:
			op := strings.ToUpper(t.Like.Op)
			x = &LikeExpr{Pos: x.Position(), X: x, Not: strings.HasPrefix(op, "NOT"), ILike: strings.HasSuffix(op, "ILIKE"), Pattern: t.Like.Pattern.lower()}
		}
	}
	return x
}

func (e *additive) lower() Expr {
	x := e.Left.lower()
	for _, t := range e.Right {
		x = &BinaryExpr{Pos: x.Position(), OpPos: t.Pos, Op: t.Op, Left: x, Right: t.Right.lower()}
	}
	return x
}

func (e *multiplicative) lower() Expr {
	x := e.Left.lower()
	for _, t := range e.Right {
		x = &BinaryExpr{Pos: x.Position(), OpPos: t.Pos, Op: t.Op, Left: x, Right: t.Right.lower()}
	}
	return x
}

func (e *unary) lower() Expr {
	if e.Neg != nil {
		return &UnaryExpr{Pos: e.Pos, Op: OpNeg, X: e.Neg.lower()}
	}
	return e.Postfix.lower()
}

func (e *postfix) lower() Expr {
	x := e.X.lower()
	for _, op := range e.Ops {
		if op.Cast != nil {
			x = &CastExpr{Pos: x.Position(), X: x, Type: op.Cast}
		} else if op.Index != nil {
			x = &IndexExpr{Pos: x.Position(), X: x, Index: op.Index.lower()}
		} else {
			x = &FieldAccess{Pos: x.Position(), X: x, Field: op.Field}
		}
	}
	return x
}

func (e *primary) lower() Expr {
	switch {
	case e.Case != nil:
		return e.Case
	case e.Cast != nil:
		return e.Cast
	case e.Extract != nil:
		return e.Extract.lower()
	case e.Position != nil:
		return e.Position.lower()
	case e.Substring != nil:
		return e.Substring.lower()
	case e.Date != nil:
		return e.Date.lower()
	case e.Interval != nil:
		return e.Interval
	case e.Timestamp != nil:
		return e.Timestamp
	case e.Bool != nil:
		return e.Bool
	case e.Null != nil:
		return e.Null
	case e.Number != nil:
		return e.Number
	case e.String != nil:
		return e.String
	case e.Exists != nil:
		return e.Exists
	case e.Call != nil:
		return e.Call
	case e.Column != nil:
		return e.Column
	case e.Subquery != nil:
		return e.Subquery
	default:
		return e.Paren.lower()
	}
}
