package expr

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
)

// Error kinds of the registry; callers test them with errors.Is.
var (
	ErrUnknownFunction = errors.New("unknown function")
	ErrNoSignature     = errors.New("no signature matches")
	ErrWrongKind       = errors.New("wrong kind of function")
)

// Kind says where a function may appear.
type Kind int

// Function kinds.
const (
	// Scalar functions map each row to a value.
	Scalar Kind = iota
	// AggregateKind functions fold the rows of a group into one value.
	AggregateKind
	// WindowKind functions (TUMBLE, HOP, SESSION) appear in GROUP BY and assign
	// each row to windows; results carry window_start and window_end.
	WindowKind
)

func (k Kind) String() string {
	switch k {
	case AggregateKind:
		return "aggregate"
	case WindowKind:
		return "window"
	}
	return "scalar"
}

// Class is a family of argument types a parameter accepts.
type Class int

// Argument classes. NULL matches every class.
const (
	AnyClass Class = iota
	NumericClass
	IntegerClass
	StringClass
	BoolClass
	TimestampClass // TIMESTAMP or DATE
	IntervalClass
	BlobClass
	// CalendarClass is an interval of months and days (INTERVAL '1' YEAR).
	CalendarClass
)

func (c Class) String() string {
	return [...]string{"any", "numeric", "integer", "varchar", "boolean", "timestamp", "interval", "blob", "calendar interval"}[c]
}

// Accepts reports whether a value of type t can be passed for this class.
func (c Class) Accepts(t arrow.DataType) bool {
	if IsNullType(t) {
		return true
	}
	switch c {
	case AnyClass:
		return true
	case NumericClass:
		return IsNumeric(t)
	case IntegerClass:
		return IsInteger(t)
	case StringClass:
		return IsString(t)
	case BoolClass:
		return t.ID() == arrow.BOOL
	case TimestampClass:
		return IsTemporal(t)
	case IntervalClass:
		return t.ID() == arrow.DURATION
	case CalendarClass:
		return t.ID() == arrow.INTERVAL_MONTH_DAY_NANO
	case BlobClass:
		return IsBlob(t)
	}
	return false
}

// Param is one declared parameter.
type Param struct {
	Name  string
	Class Class
	// Unify puts this argument in the call's unified group: all unified arguments
	// are coerced to their CommonType (e.g. both sides of =, the values of
	// COALESCE). Other arguments are coerced to Canonical of their class.
	Unify bool
}

// Signature is one overload: parameters, and a rule for the return type given the
// coerced argument types.
type Signature struct {
	Params []Param
	// Variadic: the last parameter repeats (zero or more extra times).
	Variadic bool
	// Return computes the result type from the coerced argument types.
	Return func(args []arrow.DataType) arrow.DataType
	// ReturnDoc spells the return rule for humans ("BIGINT", "same as x").
	ReturnDoc string
	// Decimal: the implementation computes on DECIMAL arguments exactly.
	// Without it a DECIMAL argument is passed as a DOUBLE.
	Decimal bool
	// Resolve, when set, replaces the matching by classes: it says whether
	// the signature takes args and, if so, their coerced types and the
	// result's (DECIMAL arithmetic, whose result scale depends on both).
	Resolve func(args []arrow.DataType) (coerced []arrow.DataType, ret arrow.DataType, ok bool)
}

// String renders e.g. "substr(s varchar, start integer) -> VARCHAR".
func (s Signature) String(name string) string {
	parts := make([]string, len(s.Params))
	for i, p := range s.Params {
		parts[i] = p.Name + " " + p.Class.String()
		if s.Variadic && i == len(s.Params)-1 {
			parts[i] += ", ..."
		}
	}
	return name + "(" + strings.Join(parts, ", ") + ") -> " + s.ReturnDoc
}

// Example is a documented call and its result; operators/functions runs every
// example as a test. For scalar functions Args holds one value per argument; for
// aggregates each element of Args is a []any column of input values. Values are
// nil, bool, int64, float64, string, time.Time, time.Duration or []byte (BLOB).
type Example struct {
	Args   []any
	Result any
}

// Function is one registered function.
type Function struct {
	Name string
	Kind Kind
	// Operator is the SQL operator that binds to this function ("+", "=", "||"),
	// empty for functions called by name.
	Operator   string
	Signatures []Signature
	Doc        string
	Examples   []Example
	// Volatile: the value depends on when the call runs (now()), so no
	// example can state it.
	Volatile bool
	// Internal: the binder writes calls to it (string_agg ... ORDER BY
	// binds to string_agg_sorted over sort_key); a user never needs to
	// name it, so listings, completion and suggestions leave it out.
	Internal bool
}

// Listed reports whether f is a function a user calls by name (not an
// operator, not internal): what SHOW FUNCTIONS, \df and completion offer.
func (f *Function) Listed() bool { return f.Operator == "" && !f.Internal }

// ExampleString renders an example as SQL: upper('abc') = 'ABC'.
func (f *Function) ExampleString(ex Example) string {
	args := make([]string, len(ex.Args))
	for i, a := range ex.Args {
		if col, ok := a.([]any); ok {
			vs := make([]string, len(col))
			for j, v := range col {
				vs[j] = FormatValue(v, nil)
			}
			args[i] = "{" + strings.Join(vs, ", ") + "}"
		} else {
			args[i] = FormatValue(a, nil)
		}
	}
	call := f.Name + "(" + strings.Join(args, ", ") + ")"
	if f.Operator != "" && len(args) == 2 {
		call = args[0] + " " + f.Operator + " " + args[1]
	} else if f.Operator != "" && len(args) == 1 {
		call = f.Operator + args[0]
	}
	return call + " = " + FormatValue(ex.Result, nil)
}

// Registry is an explicit set of functions. Builtins returns a fresh one; callers
// may add their own with Add without affecting anyone else's.
type Registry struct {
	byName map[string]*Function
	byOp   map[string][]*Function
}

// NewRegistry returns a registry holding fns.
func NewRegistry(fns ...*Function) *Registry {
	r := &Registry{byName: map[string]*Function{}, byOp: map[string][]*Function{}}
	r.Add(fns...)
	return r
}

// Add registers fns, replacing functions of the same name.
func (r *Registry) Add(fns ...*Function) {
	for _, f := range fns {
		r.byName[strings.ToLower(f.Name)] = f
		if f.Operator != "" {
			r.byOp[f.Operator] = append(r.byOp[f.Operator], f)
		}
	}
}

// Lookup finds a function by name (case-insensitive).
func (r *Registry) Lookup(name string) (*Function, bool) {
	f, ok := r.byName[strings.ToLower(name)]
	return f, ok
}

// Operator finds the function bound to a SQL operator symbol with the given arity
// ("-" is both subtract and negate).
func (r *Registry) Operator(symbol string, arity int) (*Function, bool) {
	if symbol == "!=" {
		symbol = "<>"
	}
	for _, f := range r.byOp[symbol] {
		for _, s := range f.Signatures {
			if len(s.Params) == arity || (s.Variadic && arity >= len(s.Params)-1) {
				return f, true
			}
		}
	}
	return nil, false
}

// Functions lists every function, sorted by name.
func (r *Registry) Functions() []*Function {
	out := make([]*Function, 0, len(r.byName))
	for _, f := range r.byName {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Resolved is the outcome of overload resolution.
type Resolved struct {
	Func      *Function
	Signature Signature
	// Args are the types the arguments must be cast to (same length as the call).
	Args   []arrow.DataType
	Return arrow.DataType
}

// Resolve picks the first signature of name that accepts args and computes the
// coerced argument types and the return type.
func (r *Registry) Resolve(name string, args []arrow.DataType) (Resolved, error) {
	f, ok := r.Lookup(name)
	if !ok {
		return Resolved{}, fmt.Errorf("%w %s", ErrUnknownFunction, name)
	}
	return f.Resolve(args)
}

// Resolve matches args against f's signatures.
func (f *Function) Resolve(args []arrow.DataType) (Resolved, error) {
	for _, s := range f.Signatures {
		if s.Resolve != nil {
			if coerced, ret, ok := s.Resolve(args); ok {
				return Resolved{Func: f, Signature: s, Args: coerced, Return: ret}, nil
			}
			continue
		}
		if coerced, ok := s.match(args); ok {
			return Resolved{Func: f, Signature: s, Args: coerced, Return: s.Return(coerced)}, nil
		}
	}
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = TypeName(a)
	}
	var want []string
	for _, s := range f.Signatures {
		want = append(want, s.String(f.Name))
	}
	return Resolved{}, fmt.Errorf("%w for %s(%s); candidates: %s", ErrNoSignature, f.Name,
		strings.Join(names, ", "), strings.Join(want, "; "))
}

func (s Signature) param(i int) (Param, bool) {
	if i < len(s.Params) {
		return s.Params[i], true
	}
	if s.Variadic && len(s.Params) > 0 {
		return s.Params[len(s.Params)-1], true
	}
	return Param{}, false
}

func (s Signature) match(args []arrow.DataType) ([]arrow.DataType, bool) {
	min := len(s.Params)
	if s.Variadic {
		min--
	}
	if len(args) < min || (!s.Variadic && len(args) != len(s.Params)) {
		return nil, false
	}
	var unified arrow.DataType = Null
	for i, a := range args {
		p, ok := s.param(i)
		if !ok || !p.Class.Accepts(a) {
			return nil, false
		}
		if p.Unify {
			t, ok := CommonType(unified, a)
			if !ok {
				return nil, false
			}
			unified = t
		}
	}
	out := make([]arrow.DataType, len(args))
	for i, a := range args {
		p, _ := s.param(i)
		switch {
		case p.Unify:
			out[i] = unified
		case IsNullType(a):
			out[i] = classDefault(p.Class)
		default:
			out[i] = Canonical(a)
		}
		if IsDecimal(out[i]) && !s.Decimal {
			out[i] = Float64
		}
	}
	return out, true
}

func classDefault(c Class) arrow.DataType {
	switch c {
	case NumericClass, IntegerClass:
		return Int64
	case StringClass:
		return String
	case BoolClass:
		return Bool
	case TimestampClass:
		return Timestamp
	case IntervalClass:
		return Interval
	case CalendarClass:
		return Calendar
	}
	return Null
}

// NewLiteral builds a literal from a Go value (nil, bool, integers, floats,
// string, time.Time, time.Duration), normalising integers to int64 and floats to
// float64.
func NewLiteral(v any) (*Literal, error) {
	switch x := v.(type) {
	case nil:
		return &Literal{Value: nil, DataType: Null}, nil
	case bool:
		return &Literal{Value: x, DataType: Bool}, nil
	case int:
		return &Literal{Value: int64(x), DataType: Int64}, nil
	case int32:
		return &Literal{Value: int64(x), DataType: Int64}, nil
	case int64:
		return &Literal{Value: x, DataType: Int64}, nil
	case float32:
		return &Literal{Value: float64(x), DataType: Float64}, nil
	case float64:
		return &Literal{Value: x, DataType: Float64}, nil
	case string:
		return &Literal{Value: x, DataType: String}, nil
	case time.Time:
		return &Literal{Value: x.UTC(), DataType: Timestamp}, nil
	case time.Duration:
		return &Literal{Value: x, DataType: Interval}, nil
	case []byte:
		return &Literal{Value: x, DataType: Blob}, nil
	}
	return nil, fmt.Errorf("expr: no literal for Go value of type %T", v)
}

// CastTo wraps e in a Cast unless it already has type t. A NULL literal becomes a
// typed NULL literal.
func CastTo(e Expr, t arrow.DataType) Expr {
	if arrow.TypeEqual(e.Type(), t) || IsNullType(t) {
		return e
	}
	if l, ok := e.(*Literal); ok && l.Value == nil {
		return &Literal{Value: nil, DataType: t}
	}
	if l, ok := e.(*Literal); ok {
		if f, ok := foldCast(l, t); ok {
			return f
		}
	}
	return &Cast{Expr: e, To: t}
}

// comparisons are the functions compareDatesAsDates applies to.
var comparisons = map[string]bool{"equal": true, "not_equal": true, "less": true, "less_equal": true, "greater": true, "greater_equal": true}

// compareDatesAsDates: a DATE compared with a TIMESTAMP constant at
// midnight (DATE '1994-01-01' + INTERVAL '1' YEAR folds to one) compares
// with that day as a DATE. Both sides mean the same instant, so every
// comparison answers alike; a DATE column cast to TIMESTAMP is a
// conversion per row (TPC-H's date ranges, Q1's, Q12's).
func compareDatesAsDates(args []Expr) []Expr {
	for i, a := range args {
		l, ok := a.(*Literal)
		other := args[1-i]
		if !ok || l.DataType.ID() != arrow.TIMESTAMP || other.Type().ID() != arrow.DATE32 {
			continue
		}
		t, ok := l.Value.(time.Time)
		if !ok {
			continue
		}
		t = t.UTC()
		if h, m, sec := t.Clock(); h != 0 || m != 0 || sec != 0 || t.Nanosecond() != 0 {
			continue
		}
		out := append([]Expr(nil), args...)
		out[i] = &Literal{Value: t, DataType: Date}
		return out
	}
	return args
}

// foldCast converts a literal to t where that is exact and simple: an
// integer or a DECIMAL to a DECIMAL that holds it, a DECIMAL to a DOUBLE
// (the nearest one), a DATE to a TIMESTAMP. The result is a literal, so a
// scan's row-group pruning sees the constant and nothing is cast per row.
func foldCast(l *Literal, t arrow.DataType) (*Literal, bool) {
	switch {
	case IsDecimal(t):
		d := t.(*arrow.Decimal128Type)
		var v decimal128.Num
		var from int32
		switch x := l.Value.(type) {
		case int64:
			v = decimal128.FromI64(x)
		case decimal128.Num:
			v, from = x, l.DataType.(*arrow.Decimal128Type).Scale
		default:
			return nil, false
		}
		if from > d.Scale {
			return nil, false // rounds: left to the cast
		}
		out, ok := RescaleDecimal(v, from, d.Scale, d.Precision)
		if !ok {
			return nil, false
		}
		return &Literal{Value: out, DataType: t}, true
	case t.ID() == arrow.FLOAT64 && IsDecimal(l.DataType):
		return &Literal{Value: DecimalFloat64(l.Value.(decimal128.Num), l.DataType.(*arrow.Decimal128Type).Scale), DataType: t}, true
	case t.ID() == arrow.TIMESTAMP && l.DataType.ID() == arrow.DATE32:
		return &Literal{Value: l.Value, DataType: t}, true
	}
	return nil, false
}

// NewCall resolves a scalar function call and coerces its arguments.
func (r *Registry) NewCall(name string, args ...Expr) (*Call, error) {
	compare := false
	if f, ok := r.Lookup(name); ok && comparisons[f.Name] && len(args) == 2 {
		args = compareDatesAsDates(args)
		compare = true
	}
	res, err := r.Resolve(name, types(args))
	if err != nil {
		return nil, err
	}
	if res.Func.Kind != Scalar {
		return nil, fmt.Errorf("%w: %s is a %s function", ErrWrongKind, res.Func.Name, res.Func.Kind)
	}
	if compare && args[0].Type().ID() == arrow.DATE32 && args[1].Type().ID() == arrow.DATE32 {
		// Two dates compare as days (CommonType), not as the timestamps
		// the signature's unification makes of them: no cast per row.
		return &Call{Func: res.Func.Name, Args: args, DataType: res.Return}, nil
	}
	return &Call{Func: res.Func.Name, Args: coerce(args, res.Args), DataType: res.Return}, nil
}

// NewAggregate resolves an aggregate call; no args means count(*).
func (r *Registry) NewAggregate(name string, distinct bool, args ...Expr) (*Aggregate, error) {
	res, err := r.Resolve(name, types(args))
	if err != nil {
		return nil, err
	}
	if res.Func.Kind != AggregateKind {
		return nil, fmt.Errorf("%w: %s is a %s function, not an aggregate", ErrWrongKind, res.Func.Name, res.Func.Kind)
	}
	return &Aggregate{Func: res.Func.Name, Args: coerce(args, res.Args), Distinct: distinct, DataType: res.Return}, nil
}

// NewCase builds a searched CASE; THEN and ELSE values are unified to one type.
func NewCase(whens []When, els Expr) (*Case, error) {
	var t arrow.DataType = Null
	for _, w := range whens {
		if !Class(BoolClass).Accepts(w.Cond.Type()) {
			return nil, fmt.Errorf("%w: CASE WHEN condition %s is %s, want BOOLEAN", ErrNoSignature, w.Cond, TypeName(w.Cond.Type()))
		}
		nt, ok := CommonType(t, w.Then.Type())
		if !ok {
			return nil, fmt.Errorf("%w: CASE branches %s and %s have no common type", ErrNoSignature, TypeName(t), TypeName(w.Then.Type()))
		}
		t = nt
	}
	if els != nil {
		nt, ok := CommonType(t, els.Type())
		if !ok {
			return nil, fmt.Errorf("%w: CASE ELSE %s does not match %s", ErrNoSignature, TypeName(els.Type()), TypeName(t))
		}
		t = nt
	}
	c := &Case{DataType: t}
	for _, w := range whens {
		c.Whens = append(c.Whens, When{Cond: CastTo(w.Cond, Bool), Then: CastTo(w.Then, t)})
	}
	if els != nil {
		c.Else = CastTo(els, t)
	}
	return c, nil
}

// NewIn builds x [NOT] IN (list) with x and the list unified to one type.
func NewIn(x Expr, list []Expr, negated bool) (*In, error) {
	t := x.Type()
	for _, e := range list {
		nt, ok := CommonType(t, e.Type())
		if !ok {
			return nil, fmt.Errorf("%w: IN list value %s (%s) does not compare with %s", ErrNoSignature, e, TypeName(e.Type()), TypeName(t))
		}
		t = nt
	}
	return &In{Expr: CastTo(x, t), List: coerceAll(list, t), Negated: negated}, nil
}

// NewBetween builds x [NOT] BETWEEN lo AND hi with the three unified.
func NewBetween(x, lo, hi Expr, negated bool) (*Between, error) {
	t, ok := CommonType(x.Type(), lo.Type())
	if ok {
		t, ok = CommonType(t, hi.Type())
	}
	if !ok {
		return nil, fmt.Errorf("%w: BETWEEN over %s, %s, %s", ErrNoSignature, TypeName(x.Type()), TypeName(lo.Type()), TypeName(hi.Type()))
	}
	return &Between{Expr: CastTo(x, t), Lo: CastTo(lo, t), Hi: CastTo(hi, t), Negated: negated}, nil
}

// NewLike builds x [NOT] [I]LIKE pattern over strings.
func NewLike(x, pattern Expr, negated, caseInsensitive bool) (*Like, error) {
	if !StringClass.Accepts(x.Type()) || !StringClass.Accepts(pattern.Type()) {
		return nil, fmt.Errorf("%w: LIKE wants VARCHAR operands, got %s and %s", ErrNoSignature, TypeName(x.Type()), TypeName(pattern.Type()))
	}
	return &Like{Expr: CastTo(x, String), Pattern: CastTo(pattern, String), Negated: negated, CaseInsensitive: caseInsensitive}, nil
}

// NewLogic builds an AND/OR chain over boolean operands.
func NewLogic(op LogicOp, args ...Expr) (*Logic, error) {
	for _, a := range args {
		if !BoolClass.Accepts(a.Type()) {
			return nil, fmt.Errorf("%w: %s operand %s is %s, want BOOLEAN", ErrNoSignature, op, a, TypeName(a.Type()))
		}
	}
	return &Logic{Op: op, Args: coerceAll(args, Bool)}, nil
}

// NewNot builds NOT x over a boolean operand.
func NewNot(x Expr) (*Not, error) {
	if !BoolClass.Accepts(x.Type()) {
		return nil, fmt.Errorf("%w: NOT operand %s is %s, want BOOLEAN", ErrNoSignature, x, TypeName(x.Type()))
	}
	return &Not{Expr: CastTo(x, Bool)}, nil
}

func types(args []Expr) []arrow.DataType {
	out := make([]arrow.DataType, len(args))
	for i, a := range args {
		out[i] = a.Type()
	}
	return out
}

func coerce(args []Expr, to []arrow.DataType) []Expr {
	out := make([]Expr, len(args))
	for i, a := range args {
		out[i] = CastTo(a, to[i])
	}
	return out
}

func coerceAll(args []Expr, t arrow.DataType) []Expr {
	out := make([]Expr, len(args))
	for i, a := range args {
		out[i] = CastTo(a, t)
	}
	return out
}
