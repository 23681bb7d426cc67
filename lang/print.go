package lang

import (
	"fmt"
	"regexp"
	"strings"
)

// Format prints a script in canonical form: upper-case keywords, one clause per
// line, two-space indentation, statements ending in ";" and separated by a blank
// line. The comments of each statement (Script.Comments) come on the lines
// before it. Parsing the result gives the same AST, positions aside.
func Format(s *Script) string {
	var b strings.Builder
	for i, st := range s.Statements {
		if i > 0 {
			b.WriteString("\n")
		}
		if i < len(s.Comments) {
			for _, c := range s.Comments[i] {
				b.WriteString(c)
				b.WriteString("\n")
			}
		}
		b.WriteString(Print(st))
		b.WriteString(";")
		if i < len(s.LineComments) && s.LineComments[i] != "" {
			b.WriteString(" ")
			b.WriteString(s.LineComments[i])
		}
		b.WriteString("\n")
	}
	if len(s.Trailing) > 0 {
		if len(s.Statements) > 0 {
			b.WriteString("\n")
		}
		for _, c := range s.Trailing {
			b.WriteString(c)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// Print prints one node (a statement, a clause, an expression, a type) in
// canonical form, without a trailing ";".
func Print(n Node) string {
	p := &printer{}
	p.node(n)
	return p.b.String()
}

type printer struct {
	b      strings.Builder
	indent string
}

func (p *printer) w(ss ...string) {
	for _, s := range ss {
		p.b.WriteString(s)
	}
}

// nl starts a new line at the current indentation plus extra.
func (p *printer) nl(extra string) { p.w("\n", p.indent, extra) }

func (p *printer) node(n Node) {
	switch n := n.(type) {
	case *Script:
		p.w(strings.TrimSuffix(Format(n), "\n"))
	case Expr:
		p.expr(n, 0)
	case *Query:
		p.query(n)
	case *Select:
		p.selectBlock(n)
	case *Insert:
		p.w("INSERT INTO ", quoteIdent(n.Sink))
		p.nl("")
		p.query(n.Query)
	case *Explain:
		p.w("EXPLAIN")
		if n.Analyze {
			p.w(" ANALYZE")
		}
		if len(n.Options) > 0 {
			p.w(" (")
			for i, o := range n.Options {
				if i > 0 {
					p.w(", ")
				}
				p.node(o)
			}
			p.w(")")
		}
		p.nl("")
		p.node(n.Target())
	case *ExplainOption:
		p.w(string(n.Key))
		if n.Value != "" {
			p.w(" ", quoteValue(n.Value))
		}
	case *CreateModel:
		p.w("CREATE MODEL ", ifNotExists(n.IfNotExists), quoteIdent(n.Name))
		if n.Task != "" {
			p.w(" TASK ", quoteString(n.Task))
		}
		if n.Inputs != nil {
			p.nl("  INPUTS ")
			p.columns(n.Inputs)
		}
		if n.Outputs != nil {
			p.nl("  OUTPUTS ")
			p.columns(n.Outputs)
		}
		p.nl("  VARIANTS (")
		if len(n.Variants) == 1 {
			p.node(n.Variants[0])
		} else {
			for i, v := range n.Variants {
				if i > 0 {
					p.w(",")
				}
				p.nl("    ")
				p.node(v)
			}
			p.nl("  ")
		}
		p.w(")")
		p.options("  ", n.Options)
	case *Variant:
		p.w(quoteIdent(n.Name), " FROM ", quoteString(n.Path))
		if n.Options != nil {
			p.w(" WITH ")
			p.optionList(n.Options)
		}
	case *CreateStream:
		p.w("CREATE STREAM ", ifNotExists(n.IfNotExists), quoteIdent(n.Name))
		if n.Columns != nil {
			p.w(" ")
			p.columns(n.Columns)
		}
		p.nl("  FROM ")
		p.w(string(n.Source), " ", quoteString(n.Location))
		p.format(n.Format)
		if n.Tier != "" || n.Locations != nil {
			p.nl("  AT TIER ")
			p.w(quoteIdent(n.Tier))
			if n.Locations != nil {
				p.w(" LOCATIONS ", n.Locations.Value)
			}
		}
		if n.Rate != nil {
			p.nl("  ")
			p.node(n.Rate)
		}
		p.options("  ", n.Options)
	case *Rate:
		p.w("RATE ", n.Value.Value, " PER ", string(n.Per))
	case *CreateTable:
		p.w("CREATE TABLE ", ifNotExists(n.IfNotExists), quoteIdent(n.Name))
		if n.Columns != nil {
			p.w(" ")
			p.columns(n.Columns)
		}
		p.nl("  FROM FILE ")
		p.w(quoteString(n.Path))
		p.format(n.Format)
		p.options("  ", n.Options)
	case *CreateView:
		p.w("CREATE ")
		if n.OrReplace {
			p.w("OR REPLACE ")
		}
		p.w("VIEW ", ifNotExists(n.IfNotExists), quoteIdent(n.Name))
		if n.Columns != nil {
			p.w(" ")
			p.nameList(n.Columns)
		}
		p.w(" AS")
		saved := p.indent
		p.indent += "  "
		p.nl("")
		p.query(n.Query)
		p.indent = saved
	case *CreateSink:
		p.w("CREATE SINK ", ifNotExists(n.IfNotExists), quoteIdent(n.Name))
		p.nl("  TO ")
		p.w(string(n.Target))
		if n.Target != SourceStdout && n.Target != SourceDiscard {
			p.w(" ", quoteString(n.Location))
		}
		p.format(n.Format)
		p.options("  ", n.Options)
	case *Drop:
		p.w("DROP ", string(n.Kind), " ")
		if n.IfExists {
			p.w("IF EXISTS ")
		}
		p.w(quoteIdent(n.Name))
	case *ColumnDef:
		p.w(quoteIdent(n.Name), " ")
		p.node(n.Type)
	case *Type:
		p.w(string(n.Name))
		if n.Precision != nil {
			p.w(fmt.Sprintf("(%d", *n.Precision))
			if n.Scale != nil {
				p.w(fmt.Sprintf(", %d", *n.Scale))
			}
			p.w(")")
		}
		if n.Name == TypeTensor {
			p.w("(", string(n.Elem))
			for _, d := range n.Dims {
				p.w(fmt.Sprintf(", %d", d))
			}
			p.w(")")
		}
	case *Option:
		p.w(n.Key, " = ")
		p.expr(n.Value, 0)
	case *Show:
		p.w("SHOW ", string(n.What))
	case *Describe:
		p.w("DESCRIBE ", quoteIdent(n.Name))
	case *Set:
		p.w("SET ", n.Key, " = ")
		p.expr(n.Value, 0)
	case *StopQuery:
		id := quoteIdent(n.ID)
		if bareInt.MatchString(n.ID) {
			id = n.ID
		}
		p.w("STOP QUERY ", id)
	case *SelectItem:
		p.selectItem(n)
	case *FromItem:
		p.fromItem(n)
	case *TableRef:
		p.tableRef(n)
	case *Join:
		p.join(n)
	case *Lateral:
		p.lateral(n)
	case *OrderItem:
		p.expr(n.Expr, 0)
		if n.Desc {
			p.w(" DESC")
		}
		if n.Nulls != "" {
			p.w(" NULLS ", string(n.Nulls))
		}
	case Objective:
		p.objective(n)
	case *WhenClause:
		p.w("WHEN ")
		p.expr(n.Cond, 0)
		p.w(" THEN ")
		p.expr(n.Result, 0)
	case nil:
	default:
		p.w(fmt.Sprintf("/* unprintable %T */", n))
	}
}

func ifNotExists(b bool) string {
	if b {
		return "IF NOT EXISTS "
	}
	return ""
}

func (p *printer) columns(cols []*ColumnDef) {
	p.w("(")
	for i, c := range cols {
		if i > 0 {
			p.w(", ")
		}
		p.node(c)
	}
	p.w(")")
}

func (p *printer) format(f DataFormat) {
	if f != "" {
		p.nl("  FORMAT ")
		p.w(string(f))
	}
}

func (p *printer) options(extra string, opts []*Option) {
	if opts == nil {
		return
	}
	p.nl(extra)
	p.w("WITH ")
	p.optionList(opts)
}

func (p *printer) optionList(opts []*Option) {
	p.w("(")
	for i, o := range opts {
		if i > 0 {
			p.w(", ")
		}
		p.node(o)
	}
	p.w(")")
}

func (p *printer) query(q *Query) {
	for i, c := range q.With {
		if i == 0 {
			p.w("WITH ")
		}
		p.w(quoteIdent(c.Name))
		if len(c.Columns) > 0 {
			cols := make([]string, len(c.Columns))
			for j, col := range c.Columns {
				cols[j] = quoteIdent(col)
			}
			p.w("(", strings.Join(cols, ", "), ")")
		}
		p.w(" AS (")
		saved := p.indent
		p.indent += "  "
		p.nl("")
		p.query(c.Query)
		p.indent = saved
		p.nl(")")
		if i+1 < len(q.With) {
			p.w(",")
		}
		p.nl("")
	}
	p.selectBlock(q.Select)
	for _, s := range q.UnionAll {
		p.nl("UNION ALL")
		p.nl("")
		p.selectBlock(s)
	}
	if q.OrderByAll {
		p.nl("ORDER BY ALL")
	}
	if q.OrderBy != nil {
		p.nl("ORDER BY ")
		for i, o := range q.OrderBy {
			if i > 0 {
				p.w(", ")
			}
			p.node(o)
		}
	}
	if q.Limit != nil {
		p.nl("LIMIT ")
		p.w(q.Limit.Value)
	}
	if q.Offset != nil {
		p.nl("OFFSET ")
		p.w(q.Offset.Value)
	}
	if q.Objectives != nil {
		p.nl("WITH (")
		objs := make([]string, len(q.Objectives))
		for i, o := range q.Objectives {
			objs[i] = Print(o)
		}
		p.list(objs)
		if len(p.indent)+len("WITH (")+len(strings.Join(objs, ", ")) > lineWidth {
			p.nl("")
		}
		p.w(")")
	}
}

func (p *printer) selectBlock(s *Select) {
	p.w("SELECT ")
	if s.Distinct {
		p.w("DISTINCT ")
	}
	items := make([]string, len(s.Items))
	for i, it := range s.Items {
		items[i] = Print(it)
	}
	p.list(items)
	for i, f := range s.From {
		if i == 0 {
			p.nl("FROM ")
			p.fromItem(f)
			continue
		}
		// Later items of the list sit indented under FROM, joins included.
		p.w(",")
		saved := p.indent
		p.indent += "  "
		p.nl("")
		p.fromItem(f)
		p.indent = saved
	}
	if s.Where != nil {
		p.nl("WHERE ")
		p.expr(s.Where, 0)
	}
	if s.GroupByAll {
		p.nl("GROUP BY ALL")
	}
	if s.GroupBy != nil {
		p.nl("GROUP BY ")
		for i, g := range s.GroupBy {
			if i > 0 {
				p.w(", ")
			}
			p.expr(g, 0)
		}
	}
	if s.Having != nil {
		p.nl("HAVING ")
		p.expr(s.Having, 0)
	}
	p.windowDefs(s.Windows)
}

// lineWidth is where a list stops fitting on its clause's line and goes one
// item per line instead.
const lineWidth = 80

// list writes items comma-separated on the current line, or, when that would
// pass lineWidth, one per line indented under the clause.
func (p *printer) list(items []string) {
	joined := strings.Join(items, ", ")
	if len(p.indent)+len("SELECT ")+len(joined) <= lineWidth || len(items) == 1 {
		p.w(joined)
		return
	}
	// The clause keyword already ends in a space; drop it.
	if str := p.b.String(); strings.HasSuffix(str, " ") {
		p.b.Reset()
		p.b.WriteString(strings.TrimSuffix(str, " "))
	}
	for i, it := range items {
		p.nl("  ")
		p.w(it)
		if i < len(items)-1 {
			p.w(",")
		}
	}
}

func (p *printer) selectItem(it *SelectItem) {
	switch {
	case it.Star && it.Qualifier != "":
		p.w(quoteIdent(it.Qualifier), ".*")
	case it.Star:
		p.w("*")
	default:
		p.expr(it.Expr, 0)
		if it.Alias != "" {
			p.w(" AS ", quoteIdent(it.Alias))
		}
	}
}

func (p *printer) fromItem(f *FromItem) {
	p.tableRef(f.Table)
	for _, j := range f.Joins {
		p.nl("")
		p.join(j)
	}
}

func (p *printer) tableRef(t *TableRef) {
	if t.Subquery != nil {
		p.w("(")
		saved := p.indent
		p.indent += "  "
		p.nl("")
		p.query(t.Subquery)
		p.indent = saved
		p.nl(")")
	} else {
		p.w(quoteIdent(t.Name))
	}
	if t.Alias != "" {
		p.w(" AS ", quoteIdent(t.Alias))
	}
	if t.Columns != nil {
		p.w(" ")
		p.nameList(t.Columns)
	}
}

// nameList prints (a, b, c).
func (p *printer) nameList(names []string) {
	p.w("(")
	for i, n := range names {
		if i > 0 {
			p.w(", ")
		}
		p.w(quoteIdent(n))
	}
	p.w(")")
}

func (p *printer) join(j *Join) {
	switch j.Kind {
	case JoinLeft:
		p.w("LEFT JOIN ")
	case JoinRight:
		p.w("RIGHT JOIN ")
	case JoinFull:
		p.w("FULL JOIN ")
	case JoinCross:
		p.w("CROSS JOIN ")
	default:
		p.w("JOIN ")
	}
	if j.Lateral != nil {
		p.lateral(j.Lateral)
	} else if j.Table != nil {
		p.tableRef(j.Table)
	}
	if j.On != nil {
		p.w(" ON ")
		p.expr(j.On, 0)
	}
}

func (p *printer) lateral(l *Lateral) {
	p.w("LATERAL ")
	p.expr(l.Call, 0)
	if len(l.Options) > 0 {
		p.w(" WITH (")
		for i, o := range l.Options {
			if i > 0 {
				p.w(", ")
			}
			p.w(o.Key, " = ")
			p.expr(o.Value, 0)
		}
		p.w(")")
	}
	// AS "" (a, b) is an alias too: the columns need it.
	if l.Alias != "" || l.Columns != nil {
		p.w(" AS ", quoteIdent(l.Alias))
		if l.Columns != nil {
			p.w("(")
			for i, c := range l.Columns {
				if i > 0 {
					p.w(", ")
				}
				p.w(quoteIdent(c))
			}
			p.w(")")
		}
	}
}

func (p *printer) objective(o Objective) {
	switch o := o.(type) {
	case *AccuracyObjective:
		p.w("ACCURACY >= ", o.Min.Value)
		if o.DataAware {
			p.w(" DATA AWARE")
		}
	case *ThroughputObjective:
		p.w("THROUGHPUT >= ", o.Min.Value, " PER ", string(o.Per))
	case *LatencyObjective:
		unit := string(o.Unit)
		if o.Unit == Millisecond {
			unit = "MS"
		}
		p.w("LATENCY <= ", o.Max.Value, " ", unit)
		if o.Percentile != nil {
			p.w(" PERCENTILE ", o.Percentile.Value)
		}
	case *BudgetObjective:
		p.w("BUDGET <= ", o.Max.Value, " PER ", string(o.Per))
	case *PriorityObjective:
		p.w("PRIORITY ", string(o.Class))
	}
}

// Precedence levels, loosest first; a child printed where a tighter level is
// required gets parentheses.
const (
	precOr = iota + 1
	precAnd
	precNot
	precPredicate
	precAdditive
	precMultiplicative
	precUnary
	precPostfix
	precPrimary
)

func precedence(e Expr) int {
	switch e := e.(type) {
	case *BinaryExpr:
		switch e.Op {
		case OpOr:
			return precOr
		case OpAnd:
			return precAnd
		case OpAdd, OpSub, OpConcat:
			return precAdditive
		case OpMul, OpDiv, OpIntDiv, OpMod:
			return precMultiplicative
		default:
			return precPredicate
		}
	case *UnaryExpr:
		if e.Op == OpNot {
			return precNot
		}
		return precUnary
	case *IsNullExpr, *DistinctFromExpr, *BetweenExpr, *InExpr, *LikeExpr:
		return precPredicate
	case *FieldAccess, *IndexExpr:
		return precPostfix
	}
	return precPrimary
}

// expr prints e, in parentheses if it binds looser than min.
func (p *printer) expr(e Expr, min int) {
	if e == nil {
		return
	}
	if precedence(e) < min {
		p.w("(")
		p.expr(e, 0)
		p.w(")")
		return
	}
	switch e := e.(type) {
	case *BinaryExpr:
		prec := precedence(e)
		p.expr(e.Left, prec)
		p.w(" ", string(e.Op), " ")
		p.expr(e.Right, prec+1)
	case *UnaryExpr:
		if e.Op == OpNot {
			p.w("NOT ")
			p.expr(e.X, precNot)
			return
		}
		p.w("-")
		// "--" would start a comment.
		if u, ok := e.X.(*UnaryExpr); ok && u.Op == OpNeg {
			p.w("(")
			p.expr(e.X, 0)
			p.w(")")
			return
		}
		p.expr(e.X, precUnary)
	case *IsNullExpr:
		p.expr(e.X, precPredicate)
		p.w(" IS ", not(e.Not), "NULL")
	case *DistinctFromExpr:
		p.expr(e.X, precPredicate)
		p.w(" IS ", not(e.Not), "DISTINCT FROM ")
		p.expr(e.Y, precAdditive)
	case *BetweenExpr:
		p.expr(e.X, precPredicate)
		p.w(" ", not(e.Not), "BETWEEN ")
		p.expr(e.Low, precAdditive)
		p.w(" AND ")
		p.expr(e.High, precAdditive)
	case *InExpr:
		p.expr(e.X, precPredicate)
		p.w(" ", not(e.Not), "IN ")
		if e.Subquery != nil {
			p.subquery(e.Subquery)
			return
		}
		p.w("(")
		for i, x := range e.List {
			if i > 0 {
				p.w(", ")
			}
			p.expr(x, 0)
		}
		p.w(")")
	case *LikeExpr:
		p.expr(e.X, precPredicate)
		kw := "LIKE "
		if e.ILike {
			kw = "ILIKE "
		}
		p.w(" ", not(e.Not), kw)
		p.expr(e.Pattern, precAdditive)
	case *FieldAccess:
		// a.b.c would read back as one dotted name, 1.x as a number.
		switch e.X.(type) {
		case *ColumnRef, *NumberLit:
			p.w("(")
			p.expr(e.X, 0)
			p.w(")")
		default:
			p.expr(e.X, precPostfix)
		}
		p.w(".", quoteIdent(e.Field))
	case *IndexExpr:
		p.expr(e.X, precPostfix)
		p.w("[")
		p.expr(e.Index, 0)
		p.w("]")
	case *CaseExpr:
		p.w("CASE")
		if e.Operand != nil {
			p.w(" ")
			p.expr(e.Operand, 0)
		}
		for _, wc := range e.Whens {
			p.w(" ")
			p.node(wc)
		}
		if e.Else != nil {
			p.w(" ELSE ")
			p.expr(e.Else, 0)
		}
		p.w(" END")
	case *SubqueryExpr:
		p.subquery(e.Query)
	case *ExistsExpr:
		p.w("EXISTS ")
		p.subquery(e.Query)
	case *CastExpr:
		if e.Try {
			p.w("TRY_")
		}
		p.w("CAST(")
		p.expr(e.X, 0)
		p.w(" AS ")
		p.node(e.Type)
		p.w(")")
	case *FuncCall:
		if n := strings.ToUpper(e.Name); n == "LEFT" || n == "RIGHT" {
			p.w(e.Name, "(")
		} else {
			p.w(quoteIdent(e.Name), "(")
		}
		switch {
		case e.Star:
			p.w("*")
		case e.Distinct:
			p.w("DISTINCT ")
		}
		for i, a := range e.Args {
			if i > 0 {
				p.w(", ")
			}
			p.expr(a, 0)
		}
		for i, o := range e.OrderBy {
			if i == 0 {
				p.w(" ORDER BY ")
			} else {
				p.w(", ")
			}
			p.node(o)
		}
		p.w(")")
		if e.WithinGroup != nil {
			p.w(" WITHIN GROUP (ORDER BY ")
			p.node(e.WithinGroup)
			p.w(")")
		}
		if e.Filter != nil {
			p.w(" FILTER (WHERE ")
			p.expr(e.Filter, 0)
			p.w(")")
		}
		if e.Over != nil {
			p.over(e.Over)
		}
	case *ColumnRef:
		for i, n := range e.Names {
			if i > 0 {
				p.w(".")
			}
			p.w(quoteIdent(n))
		}
	case *NumberLit:
		p.w(e.Value)
	case *StringLit:
		p.w(quoteString(e.Value))
	case *BoolLit:
		if e.Value {
			p.w("TRUE")
		} else {
			p.w("FALSE")
		}
	case *NullLit:
		p.w("NULL")
	case *IntervalLit:
		if e.Unit == "" {
			p.w("INTERVAL ", quoteString(e.Value))
		} else {
			p.w("INTERVAL ", quoteString(e.Value), " ", string(e.Unit))
		}
	case *TimestampLit:
		p.w("TIMESTAMP ", quoteString(e.Value))
	default:
		p.w(fmt.Sprintf("/* unprintable %T */", e))
	}
}

func not(b bool) string {
	if b {
		return "NOT "
	}
	return ""
}

var bareIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
var bareInt = regexp.MustCompile(`^[0-9]+$`)
var bareNumber = regexp.MustCompile(`^(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?$`)

// quoteIdent writes a name bare when it reads back as the same name, and in
// double quotes otherwise (reserved words, spaces, dashes, ...).
func quoteIdent(s string) string {
	if bareIdent.MatchString(s) && !IsReserved(s) {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// quoteValue is quoteIdent that also leaves numbers bare (EXPLAIN option
// values, query ids).
func quoteValue(s string) string {
	if bareNumber.MatchString(s) {
		return s
	}
	return quoteIdent(s)
}

func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// subquery prints a query in parentheses on lines of its own, indented.
func (p *printer) subquery(q *Query) {
	p.w("(")
	saved := p.indent
	p.indent += "  "
	p.nl("")
	p.query(q)
	p.indent = saved
	p.nl(")")
}
