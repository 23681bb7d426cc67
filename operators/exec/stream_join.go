package exec

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/rel"
	"github.com/tierflow/tierflow/planner/cardinality"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// A join without a window whose right side is a stream is Flink's regular
// join (rel.StreamJoin): both sides' rows are kept, each under the time
// bound its ON condition gives it, the state TTL and the query's memory
// budget. An inner join's result is plain rows; a LEFT JOIN's is a
// changelog (updating), as its NULL-padded rows are taken back when a
// match comes.

// streamJoin reports whether n runs as a regular join of two streams.
func streamJoin(n *logical.Join) bool {
	return n.Window == nil && !bounded(n.Right)
}

func (b *builder) streamJoin(n *logical.Join, at func(error) error) (int, *arrow.Schema, error) {
	switch n.Kind {
	case logical.InnerJoin, logical.LeftJoin, logical.CrossJoin:
	default:
		return 0, nil, at(fmt.Errorf("%w: a %s join whose right side is a stream (a join of two streams is an inner or a LEFT JOIN; an IN or EXISTS over a stream is not supported)", ErrUnsupported, n.Kind))
	}
	l, r, ls, rs, spec, err := b.twoStreams(n, at)
	if err != nil {
		return 0, nil, err
	}
	cond := n.On
	if f, ok := b.joinFilters[n]; ok && n.Kind != logical.LeftJoin {
		// An inner join's rows that the filter above drops never go out:
		// its bounds let rows go as ON's do (q7's, q9's BETWEEN in WHERE).
		cond = and(cond, f)
	}
	ss := rel.StreamJoinSpec{Join: spec, Until: joinBounds(n, cond), TTL: b.opts.StateTTL.Microseconds()}
	fns := b.opts.Functions
	probe, err := rel.NewStreamJoin(ss, ls, rs, fns, nil)
	if err != nil {
		return 0, nil, at(err)
	}
	op := b.twoStreamsOp("join (two streams)", l, r, func(st *rel.Stats) (dataflow.Operator, error) {
		return rel.NewStreamJoin(ss, ls, rs, fns, st)
	})
	return op, probe.Schema(), nil
}

// twoStreams builds a join of two streams' inputs, left then right (the
// order runtime/deploy pairs the graph's operators with the plan's nodes
// in), and the hash join's kernel spec both the regular and the window
// join start from.
func (b *builder) twoStreams(n *logical.Join, at func(error) error) (l, r int, ls, rs *arrow.Schema, spec rel.JoinSpec, err error) {
	if l, ls, err = b.node(n.Left); err != nil {
		return
	}
	if r, rs, err = b.node(n.Right); err != nil {
		return
	}
	if spec, _, _, err = kernelSpec(n); err != nil {
		err = at(err)
	}
	return
}

// twoStreamsOp adds the operator joining l and r, each instance made by mk
// with the operator's counters (reported with the query's stats).
func (b *builder) twoStreamsOp(name string, l, r int, mk func(*rel.Stats) (dataflow.Operator, error)) int {
	st := &rel.Stats{}
	b.q.stats = append(b.q.stats, st)
	op := b.g.AddOperator(dataflow.OperatorSpec{Name: name, Inputs: 2, Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
		return mk(st)
	}})
	b.g.Connect(l, 0, op, 0)
	b.g.Connect(r, 0, op, 1)
	return op
}

// joinBounds are the time bounds cond (n's ON condition, and a filter right
// above an inner join) puts on each side's rows
// (rel.StreamJoinSpec.Until): a conjunct other.t <= x (or x >= other.t,
// other.t = x, other.t BETWEEN .. AND x) where other.t is a time attribute
// of the other side trailing its watermark by lag and x reads only this
// side, bounds every later row of the other side that is not late by
// Watermark - lag, so this row can meet none of them once the watermark
// passes x + lag. Nexmark's q9: B.dateTime BETWEEN A.dateTime AND
// A.expires keeps an auction until the watermark passes its expires, and
// a bid until it passes the bid's own time.
func joinBounds(n *logical.Join, cond expr.Expr) [2][]rel.Bound {
	var out [2][]rel.Bound
	nl := n.Left.Schema().NumFields()
	side := func(e expr.Expr) int {
		cols := expr.Columns(e)
		switch {
		case len(cols) == 0:
			return -1
		case cols[len(cols)-1] < nl:
			return 0
		case cols[0] >= nl:
			return 1
		}
		return -1
	}
	overSide := func(e expr.Expr, s int) expr.Expr {
		if s == 0 {
			return e
		}
		return shiftColumns(e, -nl)
	}
	// le notes a <= b.
	le := func(a, b expr.Expr) {
		sa, sb := side(a), side(b)
		if sa < 0 || sb < 0 || sa == sb || b.Type().ID() != arrow.TIMESTAMP {
			return
		}
		lag, ok := timeAttr([2]logical.Node{n.Left, n.Right}[sa], overSide(a, sa))
		if !ok {
			return
		}
		out[sb] = append(out[sb], rel.Bound{Expr: overSide(b, sb), Lag: lag.Microseconds()})
	}
	for _, c := range cardinality.Conjuncts(cond) {
		switch c := c.(type) {
		case *expr.Call:
			if len(c.Args) != 2 {
				continue
			}
			a, b := c.Args[0], c.Args[1]
			switch c.Func {
			case "less", "less_equal":
				le(a, b)
			case "greater", "greater_equal":
				le(b, a)
			case "equal":
				le(a, b)
				le(b, a)
			}
		case *expr.Between:
			if !c.Negated {
				le(c.Lo, c.Expr)
				le(c.Expr, c.Hi)
			}
		}
	}
	return out
}

// and is the conjunction of a and b, either of which may be nil.
func and(a, b expr.Expr) expr.Expr {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return &expr.Logic{Op: expr.OpAnd, Args: []expr.Expr{a, b}}
}
