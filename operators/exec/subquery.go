package exec

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// ErrSubquery is a subquery whose answer does not fit its use (a value
// subquery with more than one row).
var ErrSubquery = fmt.Errorf("subquery")

// resolveSubqueries runs each uncorrelated subquery of the plan's
// expressions once, before the query (they read tables only, so they end),
// and puts its answer in place: a scalar subquery becomes its value (NULL for
// no row), EXISTS a boolean, IN an IN list of literals, which keeps IN's NULL
// semantics and is one hash lookup per row. at names the failing subquery.
// A subquery the rewrites copied (a key's IN filter on each side of a join)
// shares its plan with the original and runs once.
func resolveSubqueries(root logical.Node, opts Options) (logical.Node, error) {
	var err error
	ran := map[logical.Node][]any{}
	fix := func(e expr.Expr) expr.Expr {
		if err != nil || e == nil {
			return e
		}
		return expr.Transform(e, func(x expr.Expr) expr.Expr {
			sq, ok := x.(*expr.Subquery)
			if !ok || err != nil {
				return x
			}
			var out expr.Expr
			out, err = answer(sq, opts, ran)
			if err != nil {
				return x
			}
			return out
		})
	}
	out := logical.Transform(root, func(n logical.Node) logical.Node {
		if !hasSubquery(n) {
			return n
		}
		switch x := n.(type) {
		case *logical.Filter:
			c := *x
			c.Pred = fix(x.Pred)
			return &c
		case *logical.Project:
			exprs := make([]expr.Expr, len(x.Exprs))
			for i, e := range x.Exprs {
				exprs[i] = fix(e)
			}
			return logical.NewProject(x.Input, exprs, x.Names, x.Pos)
		case *logical.Join:
			return x.WithOn(fix(x.On))
		case *logical.Sort:
			c := *x
			c.Keys = append([]logical.SortKey(nil), x.Keys...)
			for i := range c.Keys {
				c.Keys[i].Expr = fix(c.Keys[i].Expr)
			}
			return &c
		case *logical.Aggregate:
			group := make([]expr.Expr, len(x.Group))
			for i, g := range x.Group {
				group[i] = fix(g)
			}
			aggs := make([]*expr.Aggregate, len(x.Aggs))
			for i, a := range x.Aggs {
				if fa, ok := fix(a).(*expr.Aggregate); ok {
					aggs[i] = fa
				} else {
					aggs[i] = a
				}
			}
			return logical.NewAggregate(x.Input, group, x.GroupNames, x.Window, aggs, x.AggNames, x.Pos)
		}
		return n
	})
	return out, err
}

// hasSubquery reports whether n's own expressions hold a subquery.
func hasSubquery(n logical.Node) bool {
	var es []expr.Expr
	switch x := n.(type) {
	case *logical.Filter:
		es = []expr.Expr{x.Pred}
	case *logical.Project:
		es = x.Exprs
	case *logical.Join:
		es = []expr.Expr{x.On}
	case *logical.Sort:
		for _, k := range x.Keys {
			es = append(es, k.Expr)
		}
	case *logical.Aggregate:
		es = append(es, x.Group...)
		for _, a := range x.Aggs {
			es = append(es, a)
		}
	}
	found := false
	for _, e := range es {
		if e == nil {
			continue
		}
		expr.Transform(e, func(x expr.Expr) expr.Expr {
			if _, ok := x.(*expr.Subquery); ok {
				found = true
			}
			return x
		})
	}
	return found
}

// answer runs one subquery, unless ran holds its plan's rows, and returns
// the expression that replaces it. Under opts.ShapeOnly it runs nothing:
// the subquery stands for an answer of no rows but of its kind (a literal,
// or an IN list of one NULL), which the graph is built around as it is
// around the real one. A coordinator placing a query shapes its graph so,
// and never runs a user's subquery (over a cross join, one grew the
// coordinator by gigabytes).
func answer(sq *expr.Subquery, opts Options, ran map[logical.Node][]any) (expr.Expr, error) {
	node, ok := sq.Plan.(logical.Node)
	if !ok {
		return nil, fmt.Errorf("%w: a subquery without a plan", ErrUnsupported)
	}
	if opts.ShapeOnly {
		switch sq.Kind {
		case expr.ExistsSubquery:
			return &expr.Literal{Value: false, DataType: expr.Bool}, nil
		case expr.ScalarSubquery:
			return &expr.Literal{Value: nil, DataType: expr.Canonical(sq.Elem)}, nil
		}
		return &expr.In{Expr: sq.Expr, List: []expr.Expr{literalOf(nil, sq.Elem)}, Negated: sq.Negated}, nil
	}
	// Only a pointer is a plan's identity (and a map key that cannot panic).
	byPointer := reflect.TypeOf(node).Kind() == reflect.Pointer
	c := newRowCollector(sq, node, opts.Memory)
	defer c.close()
	if vals, done := ran[node]; done && byPointer {
		c.vals = vals
	} else {
		o := opts
		o.Output = c
		q, err := Build(&logical.Plan{Root: &logical.Sink{Input: node, Pos: node.Position()}}, o)
		if err != nil {
			return nil, err
		}
		ctx := opts.Context
		if ctx == nil {
			ctx = context.Background()
		}
		if _, err := q.Run(ctx); err != nil && !errors.Is(err, errAnswered) {
			return nil, err
		}
		if c.err != nil {
			return nil, c.err
		}
		if byPointer {
			ran[node] = c.vals
		}
	}
	switch sq.Kind {
	case expr.ExistsSubquery:
		return &expr.Literal{Value: len(c.vals) > 0, DataType: expr.Bool}, nil
	case expr.ScalarSubquery:
		switch len(c.vals) {
		case 0:
			return &expr.Literal{Value: nil, DataType: expr.Canonical(sq.Elem)}, nil
		case 1:
			return literalOf(c.vals[0], sq.Elem), nil
		}
		return nil, fmt.Errorf("%s: %w: a subquery used as a value returned more than one row; it may return one at most", node.Position(), ErrSubquery)
	}
	if len(c.vals) == 0 {
		// IN of no rows is FALSE, even for NULL (NOT IN: TRUE), as in DuckDB.
		return &expr.Literal{Value: sq.Negated, DataType: expr.Bool}, nil
	}
	list := make([]expr.Expr, len(c.vals))
	for i, v := range c.vals {
		list[i] = literalOf(v, sq.Elem)
	}
	return &expr.In{Expr: sq.Expr, List: list, Negated: sq.Negated}, nil
}

// literalOf makes a constant of type t from a value of the subquery's
// column (ValueAt's Go value: int64 for every integer), widening an integer
// where t is DOUBLE; a literal holds a canonical type, so a narrower t is a
// cast of one.
func literalOf(v any, t arrow.DataType) expr.Expr {
	if i, ok := v.(int64); ok && t.ID() == arrow.FLOAT64 {
		v = float64(i)
	}
	c := expr.Canonical(t)
	lit := &expr.Literal{Value: v, DataType: c}
	if arrow.TypeEqual(c, t) {
		return lit
	}
	return &expr.Cast{Expr: lit, To: t}
}

// errAnswered stops a subquery's run once its collector has what its use
// needs: EXISTS one row, a value subquery two (one more is an error).
var errAnswered = errors.New("subquery answered")

// rowCollector keeps what a subquery's use needs of its first column:
// EXISTS and a value subquery their first rows (and stop the run there),
// IN its distinct values (an IN list needs each once, and NULL once). What
// it keeps is charged to the query's budget (mem, when set), so a subquery
// of many distinct values (an IN over a cross join) fails for the query's
// memory instead of growing the worker without bound.
type rowCollector struct {
	mu   sync.Mutex
	vals []any
	// most is how many rows the use needs (0: every distinct value).
	most int
	seen map[any]struct{}
	acct *dataflow.Account
	// err is why the collector refused a value (the budget's refusal).
	err error
}

func newRowCollector(sq *expr.Subquery, node logical.Node, mem *dataflow.Memory) *rowCollector {
	c := &rowCollector{}
	switch sq.Kind {
	case expr.ExistsSubquery:
		c.most = 1
	case expr.ScalarSubquery:
		c.most = 2
	default:
		c.seen = map[any]struct{}{}
	}
	if mem != nil {
		c.acct = mem.Account(fmt.Sprintf("subquery at %s", node.Position()))
	}
	return c
}

// valueBytes is what keeping v costs: its interface and map entry, and a
// string's bytes.
func valueBytes(v any) int64 {
	const entry = 48
	if s, ok := v.(string); ok {
		return entry + int64(len(s))
	}
	return entry
}

func (r *rowCollector) Write(rec arrow.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var col arrow.Array
	if rec.NumCols() > 0 {
		col = rec.Column(0)
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		if r.most > 0 && len(r.vals) >= r.most {
			return errAnswered
		}
		var v any
		if col != nil {
			v = functions.ValueAt(col, i)
		}
		if r.seen != nil {
			k := v
			if !hashable(k) {
				k = fmt.Sprint(k)
			}
			if _, dup := r.seen[k]; dup {
				continue
			}
			r.seen[k] = struct{}{}
		}
		if r.acct != nil {
			if err := r.acct.Grow(valueBytes(v)); err != nil {
				r.err = err
				return err
			}
		}
		r.vals = append(r.vals, v)
	}
	if r.most > 0 && len(r.vals) >= r.most {
		return errAnswered
	}
	return nil
}

// hashable reports whether v can be a map key (ValueAt's values are, but
// for a BLOB's []byte and a list's slice).
func hashable(v any) bool {
	switch v.(type) {
	case []byte, []any:
		return false
	}
	return v == nil || reflect.TypeOf(v).Comparable()
}

func (r *rowCollector) Close() error { return nil }

// close gives back what the collector charged: its values became an
// expression's literals, which the plan holds, not the budget.
func (r *rowCollector) close() {
	if r.acct != nil {
		r.acct.Close()
	}
}
