package exec

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/rel"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner/cardinality"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// Top-N and deduplication on a stream (Flink's): ROW_NUMBER() OVER
// (PARTITION BY ... ORDER BY ...) over a stream that no window groups, with
// WHERE rn <= N (or rn < N, rn = k) right above it, runs as rel.StreamRank,
// whose result is an updating one: a changelog with an op column. Only
// projections and filters read a changelog (they keep its op column); a
// sink writes it with op first, as Flink prints one.

// streamRank reports whether n is a row_number over an unbounded input no
// window groups: rel.StreamRank's place.
func streamRank(n *logical.WindowFuncs) bool {
	return rel.IsStreamRank(n.Funcs) && !windowed(n.Input) && !bounded(n.Input)
}

// rankBelow finds the streamRank under n through projections, and the
// column of n's output that is its row number.
func rankBelow(n logical.Node) (*logical.WindowFuncs, int, bool) {
	switch x := n.(type) {
	case *logical.WindowFuncs:
		if streamRank(x) {
			return x, x.Input.Schema().NumFields(), true
		}
	case *logical.Project:
		wf, rn, ok := rankBelow(x.Input)
		if !ok {
			return nil, 0, false
		}
		for i, e := range x.Exprs {
			if c, isCol := e.(*expr.Column); isCol && c.Index == rn {
				return wf, i, true
			}
		}
	case *logical.Filter:
		return rankBelow(x.Input)
	}
	return nil, 0, false
}

// rankBound is the most rows per key that pred lets through, from a
// conjunct comparing column rn with an integer: rn <= N, rn < N, rn = N,
// or the same written the other way round.
func rankBound(pred expr.Expr, rn int) (int64, bool) {
	best, found := int64(0), false
	for _, c := range cardinality.Conjuncts(pred) {
		call, ok := c.(*expr.Call)
		if !ok || len(call.Args) != 2 {
			continue
		}
		op := call.Func
		col, lit := call.Args[0], call.Args[1]
		if _, isLit := col.(*expr.Literal); isLit {
			col, lit = lit, col
			op = map[string]string{"greater_equal": "less_equal", "greater": "less", "equal": "equal"}[op]
		}
		cc, ok := col.(*expr.Column)
		l, lok := lit.(*expr.Literal)
		if !ok || !lok || cc.Index != rn {
			continue
		}
		v, ok := l.Value.(int64)
		if !ok {
			continue
		}
		var n int64
		switch op {
		case "less_equal", "equal":
			n = v
		case "less":
			n = v - 1
		default:
			continue
		}
		if !found || n < best {
			best, found = n, true
		}
	}
	return best, found
}

// rankOp builds the operator of a streamRank under a bound.
func (b *builder) rankOp(n *logical.WindowFuncs, schema *arrow.Schema, at func(error) error) (func() (dataflow.Operator, error), error) {
	f := n.Funcs[0]
	limit, ok := b.rankLimits[n]
	if !ok {
		err := &rel.WindowError{Func: f, Msg: "row_number on a stream needs a bound right above it, as Flink's Top-N: WHERE rn <= N (the top N rows per key) or rn = 1 (one row per key: ORDER BY ts for the first, ts DESC for the last); or apply it to the rows of GROUP BY TUMBLE(...) or HOP(...), or to a table"}
		return nil, atFunc(err, at)
	}
	st := &rel.Stats{}
	b.q.stats = append(b.q.stats, st)
	ttl := b.opts.StateTTL.Microseconds()
	mk := func() (dataflow.Operator, error) {
		return rel.NewStreamRank(f, n.Names[0], limit, ttl, schema, b.opts.Functions, st)
	}
	if _, err := mk(); err != nil {
		return nil, atFunc(&rel.WindowError{Func: f, Msg: err.Error()}, at)
	}
	return mk, nil
}

// updating reports whether n's rows are a changelog.
func updating(n logical.Node) bool {
	switch x := n.(type) {
	case *logical.WindowFuncs:
		return streamRank(x)
	case *logical.Join:
		// A LEFT JOIN of two streams takes back its NULL-padded rows.
		return x.Kind == logical.LeftJoin && streamJoin(x)
	case *logical.Project:
		return updating(x.Input)
	case *logical.Filter:
		return updating(x.Input)
	}
	return false
}

// checkUpdating refuses, at the node, anything but a projection, a filter
// or a sink over an updating result: an aggregate, join, sort or limit
// would take its retractions for new rows.
func checkUpdating(root logical.Node) error {
	var err error
	logical.Walk(root, func(n logical.Node) bool {
		if err != nil {
			return false
		}
		switch n.(type) {
		case *logical.Project, *logical.Filter, *logical.Sink:
			return true
		}
		for _, c := range n.Children() {
			if updating(c) {
				msg := fmt.Errorf("%s over an updating result (ROW_NUMBER() OVER (...) with WHERE rn <= N on a stream, or a LEFT JOIN of two streams, is a changelog of +I/-U/+U/-D rows): only projections, filters and sinks read one", describeNode(n))
				if p := n.Position(); p.Line > 0 {
					msg = fmt.Errorf("%s: %w", p, msg)
				}
				err = unsupported{msg}
				return false
			}
		}
		return true
	})
	return err
}

// describeNode names a plan node for a message.
func describeNode(n logical.Node) string {
	switch n.(type) {
	case *logical.Aggregate:
		return "GROUP BY"
	case *logical.Join:
		return "a JOIN"
	case *logical.Sort:
		return "ORDER BY"
	case *logical.Limit:
		return "LIMIT"
	case *logical.Union:
		return "UNION ALL"
	case *logical.WindowFuncs:
		return "a window function"
	}
	return n.Describe()
}

// opFirst writes a changelog with its op column first, as Flink prints one.
type opFirst struct{ sinks.Writer }

func (w opFirst) Write(rec arrow.Record) error {
	r := moveOpFirst(rec)
	defer r.Release()
	return w.Writer.Write(r)
}

// opFirstWriter wraps w, keeping what it implements besides Writer.
func opFirstWriter(w sinks.Writer) sinks.Writer {
	_, epochs := w.(sinks.EpochWriter)
	_, fails := w.(sinks.Failer)
	switch {
	case epochs && fails:
		return opFirstEpochFail{opFirstEpoch{opFirst{w}}}
	case epochs:
		return opFirstEpoch{opFirst{w}}
	case fails:
		return opFirstFail{opFirst{w}}
	}
	return opFirst{w}
}

type opFirstEpoch struct{ opFirst }

func (w opFirstEpoch) WriteEpoch(instance int, epoch dataflow.Epoch, rec arrow.Record) error {
	r := moveOpFirst(rec)
	defer r.Release()
	return w.Writer.(sinks.EpochWriter).WriteEpoch(instance, epoch, r)
}

func (w opFirstEpoch) Commit(instance int, frontier dataflow.Epoch) error {
	return w.Writer.(sinks.EpochWriter).Commit(instance, frontier)
}

type opFirstFail struct{ opFirst }

func (w opFirstFail) Fail(cause error) error { return w.Writer.(sinks.Failer).Fail(cause) }

type opFirstEpochFail struct{ opFirstEpoch }

func (w opFirstEpochFail) Fail(cause error) error { return w.Writer.(sinks.Failer).Fail(cause) }

// moveOpFirst is rec with its last column (op) first.
func moveOpFirst(rec arrow.Record) arrow.Record {
	n := int(rec.NumCols())
	fs := make([]arrow.Field, 0, n)
	cols := make([]arrow.Array, 0, n)
	op := rec.Schema().Field(n - 1)
	op.Metadata = arrow.Metadata{}
	fs = append(fs, op)
	cols = append(cols, rec.Column(n-1))
	for i := 0; i < n-1; i++ {
		fs = append(fs, rec.Schema().Field(i))
		cols = append(cols, rec.Column(i))
	}
	return array.NewRecord(arrow.NewSchema(fs, nil), cols, rec.NumRows())
}
