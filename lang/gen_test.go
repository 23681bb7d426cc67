package lang

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// exprGen builds random expression trees of every node type, to check the
// printer's parentheses and quoting against the parser on shapes no example
// has.
type exprGen struct{ r *rand.Rand }

var (
	genNames   = []string{"a", "b", "t", "text", "rate", "select", "Weird Name", `q"uote`, "_x1", "from", ""}
	genNumbers = []string{"0", "1", "42", "1.5", ".5", "7.", "1e3", "2.5E-3"}
	genStrings = []string{"", "x", "it's", "--not a comment", "/*", "a''b"}
	genBinOps  = []BinaryOp{OpOr, OpAnd, OpEq, OpNe, OpLt, OpLe, OpGt, OpGe, OpAdd, OpSub, OpConcat, OpMul, OpDiv, OpIntDiv, OpMod}
	genUnits   = []TimeUnit{Millisecond, Second, Minute, Hour, Day}
	genTypes   = []TypeName{TypeBoolean, TypeInt, TypeBigint, TypeFloat, TypeDouble, TypeVarchar, TypeBlob, TypeTimestamp}
)

func (g exprGen) pick(n int) int { return g.r.IntN(n) }

func (g exprGen) name() string { return genNames[g.pick(len(genNames))] }

func (g exprGen) leaf() Expr {
	switch g.pick(8) {
	case 0:
		return &NumberLit{Value: genNumbers[g.pick(len(genNumbers))]}
	case 1:
		return &StringLit{Value: genStrings[g.pick(len(genStrings))]}
	case 2:
		return &BoolLit{Value: g.pick(2) == 0}
	case 3:
		return &NullLit{Null: true}
	case 4:
		return &IntervalLit{Value: genNumbers[g.pick(len(genNumbers))], Unit: genUnits[g.pick(len(genUnits))]}
	case 5:
		return &TimestampLit{Value: "2026-01-01"}
	default:
		names := []string{g.name()}
		for g.pick(3) == 0 {
			names = append(names, g.name())
		}
		return &ColumnRef{Names: names}
	}
}

func (g exprGen) list(depth, min int) []Expr {
	n := min + g.pick(3)
	if n == 0 {
		return nil // what the parser leaves for an empty list
	}
	out := make([]Expr, n)
	for i := range out {
		out[i] = g.expr(depth - 1)
	}
	return out
}

func (g exprGen) expr(depth int) Expr {
	if depth <= 0 || g.pick(5) == 0 {
		return g.leaf()
	}
	d := depth - 1
	switch g.pick(13) {
	case 0, 1, 2:
		return &BinaryExpr{Op: genBinOps[g.pick(len(genBinOps))], Left: g.expr(d), Right: g.expr(d)}
	case 3:
		return &UnaryExpr{Op: []UnaryOp{OpNot, OpNeg}[g.pick(2)], X: g.expr(d)}
	case 4:
		return &IsNullExpr{X: g.expr(d), Not: g.pick(2) == 0}
	case 5:
		return &BetweenExpr{X: g.expr(d), Not: g.pick(2) == 0, Low: g.expr(d), High: g.expr(d)}
	case 6:
		return &InExpr{X: g.expr(d), Not: g.pick(2) == 0, List: g.list(d, 1)}
	case 7:
		return &LikeExpr{X: g.expr(d), Not: g.pick(2) == 0, Pattern: g.expr(d)}
	case 8:
		return &FieldAccess{X: g.expr(d), Field: g.name()}
	case 9:
		return &IndexExpr{X: g.expr(d), Index: g.expr(d)}
	case 10:
		c := &CaseExpr{}
		if g.pick(2) == 0 {
			c.Operand = g.expr(d)
		}
		for i := 0; i < 1+g.pick(2); i++ {
			c.Whens = append(c.Whens, &WhenClause{Cond: g.expr(d), Result: g.expr(d)})
		}
		if g.pick(2) == 0 {
			c.Else = g.expr(d)
		}
		return c
	case 11:
		t := &Type{Name: genTypes[g.pick(len(genTypes))]}
		if g.pick(3) == 0 {
			t = &Type{Name: TypeTensor, Elem: TypeFloat, Dims: []int64{3, 224}}
		}
		return &CastExpr{X: g.expr(d), Type: t}
	default:
		f := &FuncCall{Name: g.name()}
		switch g.pick(4) {
		case 0:
			f.Star = true
		case 1:
			f.Distinct = true
			f.Args = g.list(d, 1)
		case 2:
		default:
			f.Args = g.list(d, 1)
		}
		return f
	}
}

// TestPrintParseRandomExpressions: Parse(Print(e)) == e for random trees.
func TestPrintParseRandomExpressions(t *testing.T) {
	g := exprGen{rand.New(rand.NewPCG(1, 2))}
	for i := 0; i < 400; i++ {
		e := g.expr(4)
		src := Print(e)
		back, err := ParseExpr("gen", src)
		if err != nil {
			t.Fatalf("case %d: %s\ndoes not parse: %v", i, src, err)
		}
		ClearPositions(back)
		if !reflect.DeepEqual(e, back) {
			t.Fatalf("case %d: %s\nreads back as %s", i, src, Print(back))
		}
	}
}

func (g exprGen) tableRef(depth int) *TableRef {
	t := &TableRef{}
	if depth > 0 && g.pick(3) == 0 {
		t.Subquery = g.query(depth - 1)
		t.Alias = g.name()
	} else {
		t.Name = g.name()
		if g.pick(2) == 0 {
			t.Alias = g.name()
		}
	}
	return t
}

func (g exprGen) selectBlock(depth int) *Select {
	s := &Select{Distinct: g.pick(4) == 0}
	for i := 0; i < 1+g.pick(3); i++ {
		switch g.pick(5) {
		case 0:
			s.Items = append(s.Items, &SelectItem{Star: true})
		case 1:
			s.Items = append(s.Items, &SelectItem{Star: true, Qualifier: g.name()})
		default:
			it := &SelectItem{Expr: g.expr(2)}
			if g.pick(2) == 0 {
				it.Alias = g.name()
			}
			s.Items = append(s.Items, it)
		}
	}
	for i := 0; i < g.pick(3); i++ {
		f := &FromItem{Table: g.tableRef(depth)}
		for j := 0; j < g.pick(3); j++ {
			jn := &Join{Kind: []JoinKind{JoinInner, JoinLeft, JoinCross}[g.pick(3)]}
			if jn.Kind == JoinCross && g.pick(2) == 0 {
				l := &Lateral{Call: &FuncCall{Name: g.name(), Args: g.list(2, 0)}}
				if g.pick(3) > 0 {
					l.Alias = g.name()
					if g.pick(2) == 0 {
						l.Columns = []string{g.name(), g.name()}
					}
				}
				jn.Lateral = l
			} else {
				jn.Table = g.tableRef(depth)
			}
			if g.pick(2) == 0 {
				jn.On = g.expr(2)
			}
			f.Joins = append(f.Joins, jn)
		}
		s.From = append(s.From, f)
	}
	if g.pick(2) == 0 {
		s.Where = g.expr(3)
	}
	if g.pick(3) == 0 {
		s.GroupBy = g.list(2, 1)
		if g.pick(2) == 0 {
			s.Having = g.expr(2)
		}
	}
	return s
}

func (g exprGen) query(depth int) *Query {
	q := &Query{Select: g.selectBlock(depth)}
	for i := 0; i < g.pick(2); i++ {
		q.UnionAll = append(q.UnionAll, g.selectBlock(depth))
	}
	if g.pick(3) == 0 {
		q.OrderBy = []*OrderItem{{Expr: g.expr(1), Desc: g.pick(2) == 0}}
	}
	if g.pick(3) == 0 {
		q.Limit = &NumberLit{Value: "10"}
	}
	if g.pick(3) == 0 {
		q.Objectives = []Objective{
			&AccuracyObjective{Min: &NumberLit{Value: "0.7"}},
			&LatencyObjective{Max: &NumberLit{Value: "200"}, Unit: Millisecond, Percentile: &NumberLit{Value: "99"}},
			&PriorityObjective{Class: PriorityBestEffort},
		}[:1+g.pick(3)]
	}
	return q
}

// TestFormatParseRandomQueries: Parse(Format(s)) == s for random queries with
// subqueries, joins, laterals and unions nested in each other.
func TestFormatParseRandomQueries(t *testing.T) {
	g := exprGen{rand.New(rand.NewPCG(3, 4))}
	for i := 0; i < 150; i++ {
		var st Statement = g.query(2)
		if g.pick(3) == 0 {
			st = &Insert{Sink: g.name(), Query: st.(*Query)}
		}
		s := &Script{Statements: []Statement{st}}
		src := Format(s)
		back, err := Parse("gen", src)
		if err != nil {
			t.Fatalf("case %d:\n%s\ndoes not parse: %v", i, src, err)
		}
		ClearPositions(back)
		if !reflect.DeepEqual(s, back) {
			a, _ := json.MarshalIndent(s, "", " ")
			b, _ := json.MarshalIndent(back, "", " ")
			al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
			for j := range min(len(al), len(bl)) {
				if al[j] != bl[j] {
					t.Fatalf("case %d:\n%s\nAST differs at JSON line %d: %q vs %q\n%s", i, src, j, al[j], bl[j], strings.Join(al[max(0, j-15):j+1], "\n"))
				}
			}
			t.Fatalf("case %d:\n%s\nreads back as\n%s", i, src, Format(back))
		}
	}
}
