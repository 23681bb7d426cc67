package exec

import (
	"fmt"
	"runtime"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/rel"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// phases is a GROUP BY split in two (twoPhase, spilling): partial
// aggregates per group (count, sum, min, max; avg as a sum and a count),
// the final aggregates combining partial rows, and the projection that
// finishes avg and restores the output columns.
type phases struct {
	partial, final rel.AggregateSpec
	mid            *arrow.Schema // partial rows
	proj           *eval.Projection
}

// split splits n over input rows of schema; ok false for an aggregation it
// does not split (DISTINCT, FILTER, other functions, a window), or one whose
// phases would not give out, the one-phase aggregation's columns.
func (b *builder) split(n *logical.Aggregate, schema, out *arrow.Schema) (*phases, bool) {
	if !splittable(n) {
		return nil, false
	}
	return b.splitOver(n, nil, schema, out)
}

// splitOver is split for n, windowed by win (nil: no window): a windowed
// partial aggregation's rows carry window_start and window_end after its
// keys, and the final one groups by them as plain columns.
func (b *builder) splitOver(n *logical.Aggregate, win *rel.WindowSpec, schema, out *arrow.Schema) (*phases, bool) {
	partial := rel.AggregateSpec{Group: n.Group, GroupNames: n.GroupNames, Window: win}
	final := rel.AggregateSpec{}
	for i, g := range n.Group {
		final.Group = append(final.Group, &expr.Column{Index: i, Name: n.GroupNames[i], DataType: g.Type()})
		final.GroupNames = append(final.GroupNames, n.GroupNames[i])
	}
	if win != nil {
		for _, name := range []string{"window_start", "window_end"} {
			final.Group = append(final.Group, &expr.Column{Index: len(final.Group), Name: name, DataType: expr.Timestamp})
			final.GroupNames = append(final.GroupNames, name)
		}
	}
	k := len(final.Group)
	// addPartial adds a partial aggregate and its final combination; it
	// returns the final's column in the final aggregation's output.
	addPartial := func(fn string, args []expr.Expr, t arrow.DataType, combine string) expr.Expr {
		j := len(partial.Aggs)
		partial.Aggs = append(partial.Aggs, &expr.Aggregate{Func: fn, Args: args, DataType: t})
		partial.AggNames = append(partial.AggNames, "partial")
		col := &expr.Column{Index: k + j, Name: "partial", DataType: t}
		final.Aggs = append(final.Aggs, &expr.Aggregate{Func: combine, Args: []expr.Expr{col}, DataType: t})
		final.AggNames = append(final.AggNames, "final")
		return &expr.Column{Index: k + j, Name: "final", DataType: t}
	}
	exprs := make([]expr.Expr, 0, k+len(n.Aggs))
	exprs = append(exprs, final.Group...)
	for _, a := range n.Aggs {
		switch a.Func {
		case "count":
			exprs = append(exprs, addPartial("count", a.Args, a.DataType, "sum"))
		case "sum", "min", "max":
			exprs = append(exprs, addPartial(a.Func, a.Args, a.DataType, a.Func))
		case "avg":
			x := a.Args[0]
			var sum expr.Expr
			if d, ok := x.Type().(*arrow.Decimal128Type); ok {
				// A DECIMAL's sum stays exact, as the one-phase avg's (its
				// accumulator adds the stored integers): only the final
				// sum is read as a DOUBLE, once per group. Casting every
				// row to a DOUBLE first cost Q1 a tenth of its CPU and
				// rounded at each of its millions of additions.
				t := expr.Decimal(expr.MaxDecimalPrecision, d.Scale)
				sum = &expr.Cast{Expr: addPartial("sum", []expr.Expr{x}, t, "sum"), To: expr.Float64}
			} else {
				if !arrow.TypeEqual(x.Type(), expr.Float64) {
					x = &expr.Cast{Expr: x, To: expr.Float64}
				}
				sum = addPartial("sum", []expr.Expr{x}, expr.Float64, "sum")
			}
			cnt := addPartial("count", a.Args, expr.Int64, "sum")
			exprs = append(exprs, &expr.Call{Func: "divide", DataType: expr.Float64,
				Args: []expr.Expr{sum, &expr.Cast{Expr: cnt, To: expr.Float64}}})
		}
	}
	names := append(append([]string(nil), final.GroupNames...), n.AggNames...)
	fns := b.opts.Functions
	// Compile every phase now: anything that does not compile, or a result
	// that would not be the one-phase aggregation's, keeps one phase.
	ph, err := rel.NewHashAggregate(b.opts.Allocator, partial, schema, fns)
	if err != nil {
		return nil, false
	}
	mid := ph.Schema()
	ph.Release()
	fh, err := rel.NewHashAggregate(b.opts.Allocator, final, mid, fns)
	if err != nil {
		return nil, false
	}
	fin := fh.Schema()
	fh.Release()
	proj, err := eval.NewProjection(exprs, names, fin, fns)
	if err != nil || !sameColumns(proj.Schema(), out) {
		return nil, false
	}
	return &phases{partial: partial, final: final, mid: mid, proj: proj}, true
}

// twoPhase builds a GROUP BY without a window as a two-phase aggregation on
// p cores: whole input batches go to p partial aggregations (a Balance edge,
// so no row is copied; a Pipeline when in runs as p instances already, see
// morsels), each folds its share of the rows into partial states per group,
// one final aggregation combines the partial rows, and a projection
// finishes. This is how a query uses every core by default when its groups
// are few; a key with many groups gains nothing from partials (every one
// holds nearly every group) and is left to the exchange of
// Options.Parallelism.
func (b *builder) twoPhase(n *logical.Aggregate, in int, parallelIn bool, schema, out *arrow.Schema, p int, where *eval.Predicate, st *rel.Stats) (int, bool) {
	ph, ok := b.split(n, schema, out)
	if !ok || p < 2 {
		return 0, false
	}
	fns := b.opts.Functions
	name := "partial aggregate"
	if where != nil {
		name = "filter + partial aggregate"
	}
	pop := b.g.AddOperator(dataflow.OperatorSpec{Name: name, Inputs: 1, Outputs: 1, Workers: make([]int, p),
		New: func(dataflow.Instance) (dataflow.Operator, error) {
			if where != nil {
				return rel.NewFilteredAggregate(ph.partial, schema, fns, where, st), nil
			}
			return rel.NewAggregate(ph.partial, schema, fns, st), nil
		}})
	if parallelIn {
		b.g.Connect(in, 0, pop, 0)
	} else {
		b.g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: in}, To: dataflow.Port{Op: pop}, Kind: dataflow.Balance})
	}
	fop := b.add("final aggregate", 1, func() (dataflow.Operator, error) { return rel.NewAggregate(ph.final, ph.mid, fns, st), nil })
	b.g.Connect(pop, 0, fop, 0)
	return b.finish(fop, ph), true
}

// The names of the operators that keep their state under
// Options.MemoryLimit: a GROUP BY's (followed by the projection that
// finishes it) and a join of two tables'. On a cluster the placement
// treats them as the aggregate and the join they stand for.
const (
	SpillingAggregate = "aggregate (spills past the memory limit)"
	SpillingJoin      = "join (spills past the memory limit)"
)

// spilling builds a GROUP BY without a window that keeps its state under
// Options.MemoryLimit (rel.SpillAggregate).
func (b *builder) spilling(n *logical.Aggregate, in int, schema, out *arrow.Schema) (int, bool) {
	ph, ok := b.split(n, schema, out)
	if !ok {
		return 0, false
	}
	fns, limit, st := b.opts.Functions, b.opts.MemoryLimit, b.q.spills
	op := b.add(SpillingAggregate, 1, func() (dataflow.Operator, error) {
		return rel.NewSpillAggregate(ph.partial, ph.final, schema, fns, limit, st), nil
	})
	b.g.Connect(in, 0, op, 0)
	return b.finish(op, ph), true
}

func (b *builder) finish(in int, ph *phases) int {
	op := b.add("project", 1, func() (dataflow.Operator, error) { return rel.NewProject(ph.proj), nil })
	b.g.Connect(in, 0, op, 0)
	return op
}

// fewGroups guesses that a GROUP BY has few groups, where partial
// aggregation pays: no key, or only strings and booleans (flags, modes,
// categories). Integer and time keys (ids, timestamps) are often near
// unique.
func fewGroups(group []expr.Expr) bool {
	for _, g := range group {
		switch g.Type().ID() {
		case arrow.STRING, arrow.BOOL:
		default:
			return false
		}
	}
	return true
}

// defaultParallelism is the instances of a two-phase aggregation when
// Options.Parallelism is AllCores: every core.
func defaultParallelism() int { return runtime.GOMAXPROCS(0) }

func sameColumns(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		if a.Field(i).Name != b.Field(i).Name || !arrow.TypeEqual(a.Field(i).Type, b.Field(i).Type) {
			return false
		}
	}
	return true
}

// splittable: an aggregation twoPhase can split, by its form.
func splittable(n *logical.Aggregate) bool {
	if n.Window != nil {
		return false
	}
	for _, a := range n.Aggs {
		if a.Distinct || a.Filter != nil || len(a.Args) > 1 {
			return false
		}
		switch a.Func {
		case "count", "sum", "min", "max":
		case "avg":
			if len(a.Args) != 1 || !arrow.TypeEqual(a.DataType, expr.Float64) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// filterMorsels adds pred as p filter instances after in.
func (b *builder) filterMorsels(pred *eval.Predicate, in int, parallel bool, p int) int {
	op := b.g.AddOperator(dataflow.OperatorSpec{Name: "filter", Inputs: 1, Outputs: 1, Workers: make([]int, p),
		New: func(dataflow.Instance) (dataflow.Operator, error) { return rel.NewFilter(pred, nil), nil }})
	if parallel {
		b.g.Connect(in, 0, op, 0)
	} else {
		b.g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: in}, To: dataflow.Port{Op: op}, Kind: dataflow.Balance})
	}
	return op
}

// fusedMorsels is morsels for the input of a split aggregation, except that
// a filter directly under it comes back as a predicate for the partial
// aggregations to apply (rel.NewFilteredAggregate: kept rows are folded where
// they lie, not copied); pred is nil when there is none.
func (b *builder) fusedMorsels(input logical.Node, p int) (int, *arrow.Schema, bool, *eval.Predicate, error) {
	f, ok := input.(*logical.Filter)
	if !ok {
		in, schema, parallel, err := b.morsels(input, p)
		return in, schema, parallel, nil, err
	}
	b.noteFilter(f)
	in, schema, parallel, err := b.morsels(f.Input, p)
	if err != nil {
		return 0, nil, false, nil, err
	}
	pred, err := eval.NewPredicate(f.Pred, schema, b.opts.Functions)
	if err != nil {
		if pos := f.Position(); pos.Line > 0 {
			err = fmt.Errorf("%s: %w", pos, err)
		}
		return 0, nil, false, nil, err
	}
	return in, schema, parallel, pred, nil
}

// morsels builds the filters and projections under a split aggregation as
// p instances each, fed whole batches by a Balance edge from what they
// read (a scan, a join): the rows of a batch are filtered, computed and
// folded on one core, with no copy between. It says whether n runs as p
// instances (false: n is not a filter or projection).
func (b *builder) morsels(n logical.Node, p int) (int, *arrow.Schema, bool, error) {
	at := func(err error) error {
		if pos := n.Position(); pos.Line > 0 {
			return fmt.Errorf("%s: %w", pos, err)
		}
		return err
	}
	var input logical.Node
	switch x := n.(type) {
	case *logical.Filter:
		b.noteFilter(x)
		input = x.Input
	case *logical.Project:
		input = x.Input
	default:
		op, schema, err := b.node(n)
		return op, schema, b.par[op] == p, err
	}
	in, schema, parallel, err := b.morsels(input, p)
	if err != nil {
		return 0, nil, false, err
	}
	fns := b.opts.Functions
	var op int
	switch x := n.(type) {
	case *logical.Filter:
		pred, err := eval.NewPredicate(x.Pred, schema, fns)
		if err != nil {
			return 0, nil, false, at(err)
		}
		return b.filterMorsels(pred, in, parallel, p), schema, true, nil
	case *logical.Project:
		proj, err := eval.NewProjection(x.Exprs, x.Names, schema, fns)
		if err != nil {
			return 0, nil, false, at(err)
		}
		op = b.g.AddOperator(dataflow.OperatorSpec{Name: "project", Inputs: 1, Outputs: 1, Workers: make([]int, p),
			New: func(dataflow.Instance) (dataflow.Operator, error) { return rel.NewProject(proj), nil }})
		schema = proj.Schema()
	}
	if parallel {
		b.g.Connect(in, 0, op, 0)
	} else {
		b.g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: in}, To: dataflow.Port{Op: op}, Kind: dataflow.Balance})
	}
	return op, schema, true, nil
}

// windowPhases builds a windowed aggregation (TUMBLE or HOP) that would run
// once, taking every row of an input that runs as several instances (a
// partitioned stream's, or what follows a join of two), as two phases: a
// partial aggregation on every instance of its input, folding its share of
// the rows into partial states per group and window, and one merge
// (rel.MergeAggregate) of the partial rows, grouped by the keys, window_start
// and window_end, then the projection that finishes avg. The rule is the
// cost model's: the one-phase aggregation receives every row of every input
// instance, the merge at most one row per group, window and input instance,
// whatever the rate; and the merge, keyed by plain columns, may itself run
// as several instances (runtime/deploy). Only aggregates whose partial
// states merge exactly split (windowMergeable), so the answer is the
// one-phase answer row for row, whichever instance's partial comes first.
func (b *builder) windowPhases(n *logical.Aggregate, ws *rel.WindowSpec, in int, schema, out *arrow.Schema, st *rel.Stats) (int, bool) {
	if ws == nil || ws.ByKey || ws.ProcTime || (ws.Type != expr.Tumble && ws.Type != expr.Hop) {
		return 0, false
	}
	if keys, plain := plainColumns(n.Group); plain && len(keys) > 0 {
		return 0, false // exchanged by its keys: every instance takes a share
	}
	if !windowMergeable(n) || b.instancesUnder(in) < 2 {
		return 0, false
	}
	ph, ok := b.splitOver(n, ws, schema, out)
	if !ok {
		return 0, false
	}
	return b.partialThenFinal(in, ph, schema, st), true
}

// closingPhases builds a closing GROUP BY (closingKey) keyed by time
// attributes alone, such as q5's max per window over an upstream HOP's
// window_start and window_end, over an input of several instances, in two
// phases as windowPhases does: a partial aggregation on every input
// instance, closing its groups as the one-phase aggregation would (ws,
// by the key's grain), and a merge by epoch. Its groups are the upstream's
// windows, a few per grain whatever the rate, so the partial rows are a
// few per window and instance where the one-phase aggregation takes every
// row, each exchanged by its keys to the instance that holds the group
// (runtime/deploy places the merge so): the rows stay where they are, and
// only the partial rows cross between workers.
func (b *builder) closingPhases(n *logical.Aggregate, ws *rel.WindowSpec, in int, schema, out *arrow.Schema, st *rel.Stats) (int, bool) {
	if ws == nil || !ws.ByKey || !ClosesByTimeAlone(n) || b.instancesUnder(in) < 2 {
		return 0, false
	}
	ph, ok := b.splitOver(n, nil, schema, out)
	if !ok {
		return 0, false
	}
	ph.partial.Window = ws
	return b.partialThenFinal(in, ph, schema, st), true
}

// partialThenFinal adds ph's two phases over in: a partial aggregation on
// every input instance and its merge.
func (b *builder) partialThenFinal(in int, ph *phases, schema *arrow.Schema, st *rel.Stats) int {
	fns := b.opts.Functions
	pop := b.add("partial aggregate", 1, func() (dataflow.Operator, error) { return rel.NewAggregate(ph.partial, schema, fns, st), nil })
	b.g.Connect(in, 0, pop, 0)
	fop := b.add("final aggregate", 1, func() (dataflow.Operator, error) { return rel.NewMergeAggregate(ph.final, ph.mid, fns, nil), nil })
	b.g.Connect(pop, 0, fop, 0)
	return b.finish(fop, ph)
}

// ClosesByTimeAlone reports whether n is a closing GROUP BY (closingKey)
// whose every key is a time attribute of its input and whose aggregates
// merge exactly (windowMergeable): one closingPhases splits in two. Its
// final phase then groups by the keys, so that its instances may each take
// the keys whose hash falls to them.
func ClosesByTimeAlone(n *logical.Aggregate) bool {
	if _, _, closing := closingKey(n); !closing || len(n.Group) == 0 || !windowMergeable(n) {
		return false
	}
	for _, g := range n.Group {
		if _, attr := timeAttr(n.Input, g); !attr {
			return false
		}
	}
	return true
}

// windowMergeable reports whether every aggregate of n merges exactly from
// partial states in any order: count, min and max; sum and avg of integers
// and decimals (a sum of partial DOUBLE sums depends on the order they
// come in, so an aggregation with one stays in one phase).
func windowMergeable(n *logical.Aggregate) bool {
	for _, a := range n.Aggs {
		if a.Distinct || a.Filter != nil || len(a.Args) > 1 {
			return false
		}
		switch a.Func {
		case "count", "min", "max":
		case "sum", "avg":
			if len(a.Args) != 1 {
				return false
			}
			switch t := a.Args[0].Type(); {
			case arrow.IsInteger(t.ID()), t.ID() == arrow.DECIMAL128:
			default:
				return false
			}
			if a.Func == "avg" && !arrow.TypeEqual(a.DataType, expr.Float64) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// instancesUnder is the most instances any operator op reads from, through
// every path of edges down to the sources, runs as in the graph: a
// partitioned stream's scan runs one per partition, and the placement runs
// what it feeds (a join of two, the operators fused after) on as many.
func (b *builder) instancesUnder(op int) int {
	most := b.g.Operators[op].Parallelism()
	for _, e := range b.g.Edges {
		if e.To.Op == op {
			most = max(most, b.instancesUnder(e.From.Op))
		}
	}
	return most
}
