package expr

import (
	"bytes"
	"fmt"
	"image"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
)

// Expr is a bound, typed expression. Values are immutable: rewrites build new
// nodes with WithChildren.
type Expr interface {
	// Type is the Arrow type of the value the expression produces.
	Type() arrow.DataType
	// Children are the sub-expressions, in evaluation order.
	Children() []Expr
	// WithChildren returns a copy with the children replaced (same count).
	WithChildren(children ...Expr) Expr
	// String is a SQL-like rendering, used by EXPLAIN and error messages.
	String() string
}

// Column references the input column at Index. Name is for display only.
type Column struct {
	Index    int
	Name     string
	DataType arrow.DataType
}

// Literal is a constant. Value is nil (NULL) or one of bool, int64, float64,
// string, time.Time (TIMESTAMP), time.Duration (INTERVAL), decimal128.Num (a
// DECIMAL's unscaled value, its scale in DataType) or
// arrow.MonthDayNanoInterval (a calendar INTERVAL); DataType says which.
type Literal struct {
	Value    any
	DataType arrow.DataType
}

// Call applies a scalar function of the registry to Args. Arguments have already
// been coerced (Cast) to the types the resolved signature wants.
type Call struct {
	Func     string
	Args     []Expr
	DataType arrow.DataType
}

// When is one WHEN ... THEN ... arm of a CASE.
type When struct{ Cond, Then Expr }

// Case is the searched CASE WHEN c THEN v ... ELSE e END. A simple CASE x WHEN v
// is bound to this form with Cond = (x = v). Else is nil when absent (NULL).
type Case struct {
	Whens    []When
	Else     Expr
	DataType arrow.DataType
}

// Cast converts Expr to To; a value that does not convert is an error (not
// NULL), unless Try (TRY_CAST), which makes it NULL.
type Cast struct {
	Expr Expr
	To   arrow.DataType
	Try  bool
}

// In is x [NOT] IN (list...), with SQL NULL semantics: NULL when x is NULL, or
// when no element matches and some element is NULL.
type In struct {
	Expr    Expr
	List    []Expr
	Negated bool
}

// Between is x [NOT] BETWEEN lo AND hi (inclusive bounds).
type Between struct {
	Expr, Lo, Hi Expr
	Negated      bool
}

// Like is x [NOT] LIKE pattern ('%' any run, '_' one character, '\' escape);
// CaseInsensitive for ILIKE.
type Like struct {
	Expr, Pattern   Expr
	Negated         bool
	CaseInsensitive bool
}

// IsNull is x IS [NOT] NULL; never NULL itself.
type IsNull struct {
	Expr    Expr
	Negated bool
}

// LogicOp is AND or OR.
type LogicOp int

// The logical connectives.
const (
	OpAnd LogicOp = iota
	OpOr
)

func (o LogicOp) String() string {
	if o == OpOr {
		return "OR"
	}
	return "AND"
}

// Logic is a chain of AND or OR with SQL three-valued logic: FALSE AND NULL is
// FALSE, TRUE OR NULL is TRUE, otherwise NULL wins over the remaining value.
type Logic struct {
	Op   LogicOp
	Args []Expr
}

// Not is NOT x; NOT NULL is NULL.
type Not struct{ Expr Expr }

// Aggregate is an aggregate call in a GROUP BY query. Count with no Args is
// count(*). Filter, when set, keeps only rows for which it is TRUE.
type Aggregate struct {
	Func     string
	Args     []Expr
	Distinct bool
	Filter   Expr
	DataType arrow.DataType
}

// Type implementations.

func (c *Column) Type() arrow.DataType    { return c.DataType }
func (l *Literal) Type() arrow.DataType   { return l.DataType }
func (c *Call) Type() arrow.DataType      { return c.DataType }
func (c *Case) Type() arrow.DataType      { return c.DataType }
func (c *Cast) Type() arrow.DataType      { return c.To }
func (*In) Type() arrow.DataType          { return Bool }
func (*Between) Type() arrow.DataType     { return Bool }
func (*Like) Type() arrow.DataType        { return Bool }
func (*IsNull) Type() arrow.DataType      { return Bool }
func (*Logic) Type() arrow.DataType       { return Bool }
func (*Not) Type() arrow.DataType         { return Bool }
func (a *Aggregate) Type() arrow.DataType { return a.DataType }

// Children implementations.

func (*Column) Children() []Expr  { return nil }
func (*Literal) Children() []Expr { return nil }
func (c *Call) Children() []Expr  { return c.Args }
func (c *Case) Children() []Expr {
	out := make([]Expr, 0, 2*len(c.Whens)+1)
	for _, w := range c.Whens {
		out = append(out, w.Cond, w.Then)
	}
	if c.Else != nil {
		out = append(out, c.Else)
	}
	return out
}
func (c *Cast) Children() []Expr    { return []Expr{c.Expr} }
func (i *In) Children() []Expr      { return append([]Expr{i.Expr}, i.List...) }
func (b *Between) Children() []Expr { return []Expr{b.Expr, b.Lo, b.Hi} }
func (l *Like) Children() []Expr    { return []Expr{l.Expr, l.Pattern} }
func (n *IsNull) Children() []Expr  { return []Expr{n.Expr} }
func (l *Logic) Children() []Expr   { return l.Args }
func (n *Not) Children() []Expr     { return []Expr{n.Expr} }
func (a *Aggregate) Children() []Expr {
	if a.Filter != nil {
		return append(append([]Expr{}, a.Args...), a.Filter)
	}
	return a.Args
}

// WithChildren implementations.

func mustCount(kind string, got, want int) {
	if got != want {
		panic(fmt.Sprintf("expr: %s.WithChildren: got %d children, want %d", kind, got, want))
	}
}

func (c *Column) WithChildren(ch ...Expr) Expr  { mustCount("Column", len(ch), 0); return c }
func (l *Literal) WithChildren(ch ...Expr) Expr { mustCount("Literal", len(ch), 0); return l }
func (c *Call) WithChildren(ch ...Expr) Expr {
	mustCount("Call", len(ch), len(c.Args))
	n := *c
	n.Args = append([]Expr(nil), ch...)
	return &n
}
func (c *Case) WithChildren(ch ...Expr) Expr {
	mustCount("Case", len(ch), len(c.Children()))
	n := &Case{DataType: c.DataType, Whens: make([]When, len(c.Whens))}
	for i := range c.Whens {
		n.Whens[i] = When{Cond: ch[2*i], Then: ch[2*i+1]}
	}
	if c.Else != nil {
		n.Else = ch[len(ch)-1]
	}
	return n
}
func (c *Cast) WithChildren(ch ...Expr) Expr {
	mustCount("Cast", len(ch), 1)
	return &Cast{Expr: ch[0], To: c.To, Try: c.Try}
}
func (i *In) WithChildren(ch ...Expr) Expr {
	mustCount("In", len(ch), 1+len(i.List))
	return &In{Expr: ch[0], List: append([]Expr(nil), ch[1:]...), Negated: i.Negated}
}
func (b *Between) WithChildren(ch ...Expr) Expr {
	mustCount("Between", len(ch), 3)
	return &Between{Expr: ch[0], Lo: ch[1], Hi: ch[2], Negated: b.Negated}
}
func (l *Like) WithChildren(ch ...Expr) Expr {
	mustCount("Like", len(ch), 2)
	return &Like{Expr: ch[0], Pattern: ch[1], Negated: l.Negated, CaseInsensitive: l.CaseInsensitive}
}
func (n *IsNull) WithChildren(ch ...Expr) Expr {
	mustCount("IsNull", len(ch), 1)
	return &IsNull{Expr: ch[0], Negated: n.Negated}
}
func (l *Logic) WithChildren(ch ...Expr) Expr {
	mustCount("Logic", len(ch), len(l.Args))
	return &Logic{Op: l.Op, Args: append([]Expr(nil), ch...)}
}
func (n *Not) WithChildren(ch ...Expr) Expr { mustCount("Not", len(ch), 1); return &Not{Expr: ch[0]} }
func (a *Aggregate) WithChildren(ch ...Expr) Expr {
	mustCount("Aggregate", len(ch), len(a.Children()))
	n := *a
	if a.Filter != nil {
		n.Args = append([]Expr(nil), ch[:len(ch)-1]...)
		n.Filter = ch[len(ch)-1]
	} else {
		n.Args = append([]Expr(nil), ch...)
	}
	return &n
}

// String implementations.

func (c *Column) String() string {
	if c.Name != "" {
		return c.Name
	}
	return "#" + strconv.Itoa(c.Index)
}

func (l *Literal) String() string { return FormatValue(l.Value, l.DataType) }

// FormatValue renders a literal value as SQL would spell it.
func FormatValue(v any, t arrow.DataType) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case bool:
		if x {
			return "TRUE"
		}
		return "FALSE"
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEn") {
			s += ".0"
		}
		return s
	case string:
		return "'" + strings.ReplaceAll(x, "'", "''") + "'"
	case time.Time:
		if t != nil && t.ID() == arrow.DATE32 {
			return "DATE '" + x.UTC().Format("2006-01-02") + "'"
		}
		return "TIMESTAMP '" + x.UTC().Format("2006-01-02 15:04:05.999999") + "'"
	case time.Duration:
		return formatInterval(x)
	case decimal128.Num:
		if d, ok := t.(*arrow.Decimal128Type); ok {
			return DecimalString(x, d.Scale)
		}
	case arrow.MonthDayNanoInterval:
		return "INTERVAL '" + FormatCalendar(x) + "'"
	case []byte:
		return formatBlob(x)
	}
	return fmt.Sprint(v)
}

// FormatCalendar spells a calendar interval as DuckDB prints one: years,
// months and days, then the time of day (1 year 2 months 3 days 04:00:00).
func FormatCalendar(x arrow.MonthDayNanoInterval) string {
	var parts []string
	plural := func(n int64, unit string) {
		if n == 0 {
			return
		}
		if n == 1 || n == -1 {
			parts = append(parts, fmt.Sprintf("%d %s", n, unit))
		} else {
			parts = append(parts, fmt.Sprintf("%d %ss", n, unit))
		}
	}
	plural(int64(x.Months/12), "year")
	plural(int64(x.Months%12), "month")
	plural(int64(x.Days), "day")
	if x.Nanoseconds != 0 {
		d := time.Duration(x.Nanoseconds)
		sign := ""
		if d < 0 {
			sign, d = "-", -d
		}
		h, m := d/time.Hour, (d%time.Hour)/time.Minute
		sec := float64(d%time.Minute) / float64(time.Second)
		clock := fmt.Sprintf("%s%02d:%02d:%02d", sign, h, m, int(sec))
		if frac := sec - float64(int(sec)); frac > 0 {
			clock += strings.TrimRight(fmt.Sprintf("%.6f", frac)[1:], "0")
		}
		parts = append(parts, clock)
	}
	if len(parts) == 0 {
		return "00:00:00"
	}
	return strings.Join(parts, " ")
}

// formatBlob writes a short BLOB as a hex literal (X'0a1b') and a longer one
// as what it is: an image's format and size, else its length, since a
// hundred bytes of hex say nothing to a reader.
func formatBlob(b []byte) string {
	if len(b) <= 16 {
		return fmt.Sprintf("X'%x'", b)
	}
	if c, format, err := image.DecodeConfig(bytes.NewReader(b)); err == nil {
		return fmt.Sprintf("<%s %dx%d, %d bytes>", strings.ToUpper(format), c.Width, c.Height, len(b))
	}
	return fmt.Sprintf("<BLOB, %d bytes>", len(b))
}

func formatInterval(d time.Duration) string {
	units := []struct {
		name string
		d    time.Duration
	}{{"DAY", 24 * time.Hour}, {"HOUR", time.Hour}, {"MINUTE", time.Minute}, {"SECOND", time.Second}, {"MILLISECOND", time.Millisecond}}
	for _, u := range units {
		if d != 0 && d%u.d == 0 {
			return fmt.Sprintf("INTERVAL '%d' %s", d/u.d, u.name)
		}
	}
	return fmt.Sprintf("INTERVAL '%d' MICROSECOND", d/time.Microsecond)
}

// The composite expressions' String methods write into one builder
// (writeExpr): concatenating each child's string made a chain of n
// operators copy O(n^2) bytes (a 150,000-term a+a+... took minutes, #25).

func (c *Call) String() string    { return format(c) }
func (c *Case) String() string    { return format(c) }
func (c *Cast) String() string    { return format(c) }
func (i *In) String() string      { return format(i) }
func (b *Between) String() string { return format(b) }
func (l *Like) String() string    { return format(l) }
func (n *IsNull) String() string  { return format(n) }
func (l *Logic) String() string   { return format(l) }
func (n *Not) String() string     { return format(n) }

// format is e's String.
func format(e Expr) string {
	var b strings.Builder
	writeExpr(&b, e)
	return b.String()
}

// writeExpr writes e as String spells it. Leaves (and the types not
// listed) write their own String.
func writeExpr(b *strings.Builder, e Expr) {
	switch e := e.(type) {
	case *Call:
		if f, ok := operatorSymbols[e.Func]; ok {
			if len(e.Args) == 1 {
				b.WriteString("(" + f)
				writeExpr(b, e.Args[0])
				b.WriteString(")")
				return
			}
			if len(e.Args) == 2 {
				b.WriteString("(")
				writeExpr(b, e.Args[0])
				b.WriteString(" " + f + " ")
				writeExpr(b, e.Args[1])
				b.WriteString(")")
				return
			}
		}
		b.WriteString(e.Func + "(")
		writeList(b, e.Args, ", ")
		b.WriteString(")")
	case *Case:
		b.WriteString("CASE")
		for _, w := range e.Whens {
			b.WriteString(" WHEN ")
			writeExpr(b, w.Cond)
			b.WriteString(" THEN ")
			writeExpr(b, w.Then)
		}
		if e.Else != nil {
			b.WriteString(" ELSE ")
			writeExpr(b, e.Else)
		}
		b.WriteString(" END")
	case *Cast:
		if e.Try {
			b.WriteString("TRY_CAST(")
		} else {
			b.WriteString("CAST(")
		}
		writeExpr(b, e.Expr)
		b.WriteString(" AS " + TypeName(e.To) + ")")
	case *In:
		b.WriteString("(")
		writeExpr(b, e.Expr)
		b.WriteString(not(e.Negated) + " IN (")
		writeList(b, e.List, ", ")
		b.WriteString("))")
	case *Between:
		b.WriteString("(")
		writeExpr(b, e.Expr)
		b.WriteString(not(e.Negated) + " BETWEEN ")
		writeExpr(b, e.Lo)
		b.WriteString(" AND ")
		writeExpr(b, e.Hi)
		b.WriteString(")")
	case *Like:
		op := " LIKE "
		if e.CaseInsensitive {
			op = " ILIKE "
		}
		b.WriteString("(")
		writeExpr(b, e.Expr)
		b.WriteString(not(e.Negated) + op)
		writeExpr(b, e.Pattern)
		b.WriteString(")")
	case *IsNull:
		b.WriteString("(")
		writeExpr(b, e.Expr)
		if e.Negated {
			b.WriteString(" IS NOT NULL)")
		} else {
			b.WriteString(" IS NULL)")
		}
	case *Logic:
		b.WriteString("(")
		writeList(b, e.Args, " "+e.Op.String()+" ")
		b.WriteString(")")
	case *Not:
		b.WriteString("(NOT ")
		writeExpr(b, e.Expr)
		b.WriteString(")")
	default:
		b.WriteString(e.String())
	}
}

// writeList writes es separated by sep.
func writeList(b *strings.Builder, es []Expr, sep string) {
	for i, e := range es {
		if i > 0 {
			b.WriteString(sep)
		}
		writeExpr(b, e)
	}
}

func (a *Aggregate) String() string {
	args := joinExprs(a.Args)
	if len(a.Args) == 0 && a.Func == "count" {
		args = "*"
	}
	if a.Distinct {
		args = "DISTINCT " + args
	}
	s := a.Func + "(" + args + ")"
	if a.Filter != nil {
		s += " FILTER (WHERE " + a.Filter.String() + ")"
	}
	return s
}

func not(neg bool) string {
	if neg {
		return " NOT"
	}
	return ""
}

func joinExprs(es []Expr) string {
	var b strings.Builder
	writeList(&b, es, ", ")
	return b.String()
}

// Walk calls fn for e and then, if fn returns true, for each child, depth first.
func Walk(e Expr, fn func(Expr) bool) {
	if e == nil || !fn(e) {
		return
	}
	for _, c := range e.Children() {
		Walk(c, fn)
	}
}

// Transform rebuilds e bottom-up, replacing each node by fn(node) after its
// children have been transformed.
func Transform(e Expr, fn func(Expr) Expr) Expr {
	if e == nil {
		return nil
	}
	ch := e.Children()
	if len(ch) > 0 {
		nc := make([]Expr, len(ch))
		changed := false
		for i, c := range ch {
			nc[i] = Transform(c, fn)
			changed = changed || nc[i] != c
		}
		if changed {
			e = e.WithChildren(nc...)
		}
	}
	return fn(e)
}

// Columns returns the sorted, distinct column indexes e references.
func Columns(e Expr) []int {
	seen := map[int]bool{}
	var out []int
	Walk(e, func(x Expr) bool {
		if c, ok := x.(*Column); ok && !seen[c.Index] {
			seen[c.Index] = true
			out = append(out, c.Index)
		}
		return true
	})
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// HasAggregate reports whether e contains an aggregate call.
func HasAggregate(e Expr) bool {
	found := false
	Walk(e, func(x Expr) bool {
		if _, ok := x.(*Aggregate); ok {
			found = true
		}
		return !found
	})
	return found
}
