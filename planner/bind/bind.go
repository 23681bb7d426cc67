// Package bind turns parsed statements into logical plans: names are resolved
// against the catalog (models, streams, tables, sinks) and the function
// registry, expressions are type-checked into planner/expr trees, and every
// problem of a statement is reported at once, each at the token it blames
// (file:line:col). It also applies CREATE/DROP statements to a catalog. It
// imports lang and the planner's catalog, expr and logical packages; never the
// optimizer, operators or dataflow.
package bind

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/alecthomas/participle/v2/lexer"
	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/internal/yamlx"
	"github.com/tierflow/tierflow/planner/logical"
)

// Error kinds; every bind error wraps one of them.
var (
	// ErrBind: a statement that does not type-check or is not supported.
	ErrBind = errors.New("bind error")
	// ErrUnknown: a name the catalog or the query's scope does not hold.
	ErrUnknown = catalog.ErrUnknown
)

// Error is one problem at one position.
type Error struct {
	Pos  catalog.Pos
	Msg  string
	Kind error
	// Err, when set, is the cause (a file that cannot be read for its
	// schema), kept for errors.Is beside Kind.
	Err error
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Kind, e.Err}
	}
	return []error{e.Kind}
}

// Errors is every problem of a statement, in source order.
type Errors []*Error

func (es Errors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap exposes the kinds for errors.Is.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Pos converts a parser position.
func Pos(p lexer.Position) catalog.Pos {
	return catalog.Pos{File: p.Filename, Line: p.Line, Col: p.Column}
}

// Binder binds statements against a catalog and a function registry.
type Binder struct {
	Catalog *catalog.Catalog
	Funcs   *expr.Registry
	errs    Errors
	// clause names the clause being bound, for errors about what it may not
	// hold (aggregates in WHERE).
	clause string
	// models counts model calls, so that a model called twice gets distinct
	// operator names.
	models map[string]int
	// wins collects the window functions of the SELECT list and ORDER BY
	// being bound; nil in every other clause, where they are errors.
	wins *winScope
	// CheckModelArgs, when set, checks each model call's arguments against
	// the inputs the model's files declare; nil: the catalog's declared
	// input types are all that is checked.
	CheckModelArgs ModelArgChecker
	// Now is the instant now() means (nil: the clock, read once per
	// binder); tests pin it.
	Now   func() time.Time
	nowAt time.Time
	// ctes are the WITH names in scope, innermost last.
	ctes []*lang.CTE
	// inlined counts the operators WITH and view references have copied
	// into the plan being bound; inlining is how deep in references the
	// binder is (inline).
	inlined, inlining int
	// inView holds the views being bound (lower-case names), to refuse one
	// that reads itself.
	inView map[string]bool
	// replaced maps a correlated subquery to the expression over the
	// joined derived tables that stands for it (decorrelate); sqN numbers
	// those tables.
	replaced map[lang.Expr]lang.Expr
	sqN      int
	// joined holds the EXISTS conjuncts of WHERE a semi or anti join
	// answers (semiJoin): WHERE drops them.
	joined map[lang.Expr]bool
}

// now is the query's instant, read once so that every now() agrees.
func (b *Binder) now() time.Time {
	if b.nowAt.IsZero() {
		if b.Now != nil {
			b.nowAt = b.Now()
		} else {
			b.nowAt = time.Now()
		}
		// Timestamps are microseconds.
		b.nowAt = b.nowAt.UTC().Truncate(time.Microsecond)
	}
	return b.nowAt
}

// ModelArgChecker checks the bound types of a call's arguments against what
// model m's files take (their declared tensor shapes), returning the index
// of the argument at fault (-1: the call as a whole) and the error. The
// planner opens no model file: the caller that can installs one
// (runtime/inference.Runtime.CheckModelArgs).
type ModelArgChecker func(m *catalog.Model, args []arrow.DataType) (int, error)

// New returns a binder over cat with the builtin functions.
func New(cat *catalog.Catalog) *Binder {
	return &Binder{Catalog: cat, Funcs: expr.Builtins()}
}

func (b *Binder) errorf(p lexer.Position, kind error, format string, args ...any) {
	b.errs = append(b.errs, &Error{Pos: Pos(p), Msg: fmt.Sprintf(format, args...), Kind: kind})
}

func (b *Binder) err() error {
	if len(b.errs) == 0 {
		return nil
	}
	es := append(Errors(nil), b.errs...)
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Pos.Line != es[j].Pos.Line {
			return es[i].Pos.Line < es[j].Pos.Line
		}
		return es[i].Pos.Col < es[j].Pos.Col
	})
	b.errs = nil
	return es
}

// Bind binds a SELECT query or an INSERT INTO ... SELECT into a logical plan
// whose root is a Sink.
func (b *Binder) Bind(stmt lang.Statement) (*logical.Plan, error) {
	b.errs = nil
	b.models = map[string]int{}
	b.inlined, b.inlining = 0, 0
	var q *lang.Query
	var sink *catalog.Sink
	pos := stmt.Position()
	switch s := stmt.(type) {
	case *lang.Query:
		q = s
	case *lang.Insert:
		q = s.Query
		sink = b.Catalog.Sink(s.Sink)
		if sink == nil {
			b.unknown(s.Pos, "sink", s.Sink, sinkNames(b.Catalog))
		}
	case *lang.Explain:
		return b.Bind(s.Target())
	default:
		return nil, &Error{Pos: Pos(pos), Msg: fmt.Sprintf("%T is not a query", stmt), Kind: ErrBind}
	}
	b.countModels(q)
	root, _ := b.query(q, nil)
	obj := b.objectives(q.Objectives)
	if obj.DataAware {
		b.checkDataAware(root, obj.DataAwarePos)
	}
	if err := b.err(); err != nil {
		return nil, err
	}
	return &logical.Plan{Root: &logical.Sink{Input: root, Sink: sink, Pos: Pos(pos)}, Objectives: obj}, nil
}

func sinkNames(c *catalog.Catalog) []string {
	var out []string
	for _, s := range c.Sinks {
		out = append(out, s.Name)
	}
	return out
}

func (b *Binder) unknown(p lexer.Position, kind, name string, have []string) {
	msg := fmt.Sprintf("unknown %s %q", kind, name)
	if s := yamlx.Suggest(name, have); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	b.errorf(p, ErrUnknown, "%s", msg)
}

// countModels notes how often each model is called, to name operators.
func (b *Binder) countModels(q *lang.Query) {
	counts := map[string]int{}
	var visitQ func(q *lang.Query)
	visitT := func(t *lang.TableRef) {
		if t != nil && t.Subquery != nil {
			visitQ(t.Subquery)
		}
	}
	visitQ = func(q *lang.Query) {
		for _, s := range q.Selects() {
			for _, f := range s.From {
				visitT(f.Table)
				for _, j := range f.Joins {
					visitT(j.Table)
					if j.Lateral != nil && j.Lateral.Call != nil {
						counts[strings.ToLower(j.Lateral.Call.Name)]++
					}
				}
			}
		}
	}
	visitQ(q)
	for k, v := range counts {
		if v > 1 {
			b.models[k] = v
		}
	}
}

// column is one column of a scope: the relation alias that qualifies it.
type column struct {
	qual string
	name string
	typ  arrow.DataType
	// hidden: a derived table's column that * does not list (decorrelate's).
	hidden bool
}

// scope is the row a FROM clause produces, aligned with a node's schema.
type scope struct {
	cols []column
	// failed are relation aliases whose binding already failed: references
	// to them are not reported again.
	failed map[string]bool
}

func scopeOf(n logical.Node, qual string) *scope {
	s := &scope{}
	for _, f := range n.Schema().Fields() {
		s.cols = append(s.cols, column{qual: qual, name: f.Name, typ: f.Type})
	}
	return s
}

func (s *scope) concat(o *scope) *scope {
	out := &scope{cols: append(append([]column(nil), s.cols...), o.cols...)}
	for _, f := range []map[string]bool{s.failed, o.failed} {
		for k := range f {
			out.fail(k)
		}
	}
	return out
}

func (s *scope) fail(alias string) {
	if s.failed == nil {
		s.failed = map[string]bool{}
	}
	s.failed[strings.ToLower(alias)] = true
}

// resolve finds a column by optional qualifier and name (case-insensitive).
func (s *scope) resolve(qual, name string) (int, int) {
	idx, n := -1, 0
	for i, c := range s.cols {
		if strings.EqualFold(c.name, name) && (qual == "" || strings.EqualFold(c.qual, qual)) {
			if idx < 0 {
				idx = i
			}
			n++
		}
	}
	return idx, n
}

// has reports whether the scope holds a column of that name (under qual when
// given).
func (s *scope) has(qual, name string) bool {
	_, n := s.resolve(qual, name)
	return n > 0
}

func (s *scope) names() []string {
	out := make([]string, len(s.cols))
	for i, c := range s.cols {
		out[i] = c.name
	}
	return out
}

func (s *scope) hasQualifier(q string) bool {
	for _, c := range s.cols {
		if strings.EqualFold(c.qual, q) {
			return true
		}
	}
	return false
}
