package deploy

import (
	"slices"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/rel"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// A join of two streams (a regular join under its time bounds and TTL, or
// a window join) keeps each side's rows until the other side's watermark
// lets them go; with equality conjuncts in its ON, a row can only ever
// meet rows of the other side with the same key. So it splits like a
// keyed aggregation: each input is hash-exchanged by its own equi-join
// columns under one hash (dataflow.HashColumns, which hashes a value
// alike in every integer or float width), and instance k keeps and joins
// the keys whose hash falls to k. Every instance takes the least of its
// senders' watermarks, as one instance did, so which rows are late and
// when a row is let go follow from the data alone.
//
// How many instances, and where: the more of
//   - the optimizer's workers for the join's stage: more than one when its
//     estimated demand is over one worker's capacity for it (the cost
//     model's rule), and
//   - the instances of its widest input, one on each of their workers. The
//     input's rows are there already: gathering them into one instance
//     sends every row of the other workers' instances over the network,
//     as a hash exchange over those instances does, while the exchange has
//     each instance join 1/N of them, on as many cores as the input's
//     instances use. Never more traffic, less work per instance: a
//     partitioned stream's join follows its partitions as the
//     aggregation fused after its scan does.
//
// A join with no equality of plain columns (a cross join, a join on an
// expression, a window join on the window alone) has no key to split by
// and runs as one instance.

// joinColumns returns the input columns a join of two streams splits each
// input by (left over the left input, right over the right, pairwise
// equal), or false when its ON has no equality of two columns whose
// values hash alike in both types.
func joinColumns(j *logical.Join) (left, right []int, ok bool) {
	if j.On == nil || j.Kind == logical.CrossJoin {
		return nil, nil, false
	}
	nl := j.Left.Schema().NumFields()
	lk, rk, _ := rel.SplitJoinCondition(j.On, nl)
	for i := range lk {
		l, lt := keyColumn(lk[i])
		r, rt := keyColumn(rk[i])
		if l < 0 || r < 0 || !dataflow.HashAlike(lt, rt) {
			continue
		}
		left, right = append(left, l), append(right, r)
	}
	return left, right, len(left) > 0
}

// keyColumn is the column e reads when e is a column, or a cast of one
// that keeps its value (an INT widened to BIGINT for a comparison with
// one, a FLOAT to DOUBLE), with the type it hashes as; -1 otherwise.
func keyColumn(e expr.Expr) (int, arrow.DataType) {
	switch x := e.(type) {
	case *expr.Column:
		return x.Index, x.DataType
	case *expr.Cast:
		c, ok := x.Expr.(*expr.Column)
		if ok && !x.Try && widens(c.DataType, x.To) {
			return c.Index, c.DataType
		}
	}
	return -1, nil
}

// widens reports whether a cast from a to b keeps every value of a.
func widens(a, b arrow.DataType) bool {
	signed := func(t arrow.DataType) bool { return arrow.IsSignedInteger(t.ID()) }
	switch {
	case arrow.TypeEqual(a, b):
		return true
	case signed(a) && signed(b):
		return width(a) <= width(b)
	case arrow.IsUnsignedInteger(a.ID()) && (arrow.IsUnsignedInteger(b.ID()) && width(a) <= width(b) || signed(b) && width(a) < width(b)):
		return true
	case a.ID() == arrow.FLOAT32 && b.ID() == arrow.FLOAT64:
		return true
	}
	return false
}

func width(t arrow.DataType) int {
	if fw, ok := t.(arrow.FixedWidthDataType); ok {
		return fw.BitWidth()
	}
	return 0
}

// placeJoin places operator i, a join of two streams whose stage the
// optimizer put on ws, over its instances (above), and routes its two
// input edges in: an exchange each, by that side's join columns, or
// pipelines into its one instance. It notes the columns its output is
// split by for the operators fused after it.
func (pl *placer) placeJoin(i int, j *logical.Join, in []int, ws []Worker) {
	if pl.broadcastJoin(i, j, in) {
		return
	}
	left, right, keyed := joinColumns(j)
	inst, tier := ws, ws[0].Tier
	for _, e := range in {
		up := pl.p.Operators[pl.g.Edges[e].From.Op]
		if !keyed || len(up.Workers) <= len(inst) {
			continue
		}
		inst, tier = nil, up.Tier
		for _, wi := range up.Workers {
			inst = append(inst, pl.workerNamed(pl.p.Workers[wi]))
		}
	}
	if !keyed || len(inst) < 2 {
		pl.place(i, ws[0].Tier, ws[:1])
		for _, e := range in {
			pl.p.Edges[e] = EdgePlan{Kind: "pipeline"}
		}
		return
	}
	pl.place(i, tier, inst)
	for port, e := range in {
		keys := left
		if port == 1 {
			keys = right
		}
		pl.p.Edges[e] = EdgePlan{Kind: "exchange", Keys: keys, KeyNames: columnNames(j.Children()[port], keys)}
	}
	// The output is the left columns then the right: equal left keys are
	// in one instance, and so are equal right keys of an inner join (a
	// LEFT JOIN's unmatched rows carry NULL there, from every instance).
	split := [][]int{left}
	if j.Kind == logical.InnerJoin {
		nl := j.Left.Schema().NumFields()
		shifted := make([]int, len(right))
		for k, c := range right {
			shifted[k] = c + nl
		}
		split = append(split, shifted)
	}
	pl.split[i] = split
}

// broadcastJoin places operator i, a join of two streams, on the
// instances of its wide input, whose rows stay where they are (a pipeline),
// with every row of its other input sent to each instance (a broadcast),
// when that other input has at most one row per window, whatever the
// rate: a window aggregation without keys, or a closing GROUP BY by time
// keys alone (operators/exec ClosesByTimeAlone), under projections and
// filters. q7's highest price per window and q5's highest count per
// window are such: a hash exchange by the join columns would send half
// the wide side's rows (every bid, in q7) between two workers to meet
// them, the broadcast sends the few rows twice. Each row of the wide side
// is in one instance and meets every row of the other there, so an inner
// join answers each pair once. An outer, semi or anti join keeps the
// exchange (a LEFT join with the wide side on the left would split so
// too, but no test covers it yet). It reports false where the rule does
// not apply.
func (pl *placer) broadcastJoin(i int, j *logical.Join, in []int) bool {
	if len(in) != 2 || j.Kind != logical.InnerJoin {
		return false
	}
	wide := -1
	switch {
	case windowsOnly(j.Right) && !windowsOnly(j.Left):
		wide = 0
	case windowsOnly(j.Left) && !windowsOnly(j.Right):
		wide = 1
	default:
		return false
	}
	upOp := pl.g.Edges[in[wide]].From.Op
	up := pl.p.Operators[upOp]
	if len(up.Workers) < 2 {
		return false
	}
	pl.p.Operators[i] = OperatorPlan{Name: pl.g.Operators[i].Name, Workers: up.Workers, Tier: up.Tier}
	pl.p.Edges[in[wide]] = EdgePlan{Kind: "pipeline"}
	pl.p.Edges[in[1-wide]] = EdgePlan{Kind: "broadcast"}
	// The output is the left columns then the right: the wide side's
	// split columns, where it had any, still split it.
	var split [][]int
	shift := 0
	if wide == 1 {
		shift = j.Left.Schema().NumFields()
	}
	for _, set := range pl.split[upOp] {
		moved := make([]int, len(set))
		for k, c := range set {
			moved[k] = c + shift
		}
		split = append(split, moved)
	}
	pl.split[i] = split
	return true
}

// windowsOnly reports whether n's rows are at most one per window of an
// aggregation under projections and filters: a window aggregation
// without keys, or a closing GROUP BY by time keys alone.
func windowsOnly(n logical.Node) bool {
	for {
		switch x := n.(type) {
		case *logical.Project:
			n = x.Input
		case *logical.Filter:
			n = x.Input
		case *logical.Aggregate:
			return x.Window != nil && len(x.Group) == 0 || exec.ClosesByTimeAlone(x)
		default:
			return false
		}
	}
}

// workerNamed is the registered worker called name.
func (pl *placer) workerNamed(name string) Worker {
	for _, w := range pl.workers {
		if w.Name == name {
			return w
		}
	}
	return Worker{Name: name}
}

// columnNames are the names of n's output columns cols.
func columnNames(n logical.Node, cols []int) []string {
	s := n.Schema()
	out := make([]string, len(cols))
	for k, c := range cols {
		if c >= 0 && c < s.NumFields() {
			out[k] = s.Field(c).Name
		}
	}
	return out
}

// splitAfter carries the columns operator up's output is split by
// through node n fused after it (a filter keeps them; a projection keeps
// those it passes on as plain columns, renumbered; an aggregate whose
// groups hold a set keeps it at the groups' places), or nil.
func splitAfter(split [][]int, n logical.Node) [][]int {
	var out [][]int
	for _, set := range split {
		var moved []int
		for _, c := range set {
			to := -1
			switch x := n.(type) {
			case *logical.Filter:
				to = c
			case *logical.Project:
				to = slices.IndexFunc(x.Exprs, func(e expr.Expr) bool { col, ok := e.(*expr.Column); return ok && col.Index == c })
			case *logical.Aggregate:
				to = slices.IndexFunc(x.Group, func(e expr.Expr) bool { col, ok := e.(*expr.Column); return ok && col.Index == c })
			}
			if to < 0 {
				moved = nil
				break
			}
			moved = append(moved, to)
		}
		if moved != nil {
			out = append(out, moved)
		}
	}
	return out
}

// splitCovers reports whether rows split by one of the column sets split
// already have every row of each key of keys in one instance: keys hold
// all of some set's columns (rows equal on keys are equal on that set).
func splitCovers(split [][]int, keys []int) bool {
	for _, set := range split {
		if len(set) > 0 && !slices.ContainsFunc(set, func(c int) bool { return !slices.Contains(keys, c) }) {
			return true
		}
	}
	return false
}
