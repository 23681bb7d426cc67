// Package cardinality estimates how many rows each node of a logical plan
// produces, and how many distinct values each of its columns holds, from
// table statistics (catalog.TableStats: row counts, distinct counts, min and
// max) where they are known and from the textbook defaults of
// planner/logical.Selectivity where they are not. The join order
// (planner/rewrite's reorder_joins) and EXPLAIN read it.
//
// The estimates follow System R and its successors: a filter keeps the
// fraction its predicate's selectivity says (an equality 1/distinct, a range
// the share of [min, max] it covers, AND multiplies, OR adds minus the
// overlap); an equi-join of two inputs keeps |L| x |R| / max(dL, dR) rows
// (every key value of the side with fewer distinct values finds its match,
// the containment assumption); a GROUP BY has as many rows as its keys have
// combinations, at most its input's rows.
//
// It imports the planner's catalog, expr and logical packages only.
package cardinality

import (
	"math"
	"time"

	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// DefaultRows is the row count of a table or stream without statistics.
const DefaultRows = 1000

// Col is what is known of one output column.
type Col struct {
	// Distinct is the estimated number of distinct non-NULL values; 0 when
	// unknown.
	Distinct float64
	// NullFrac is the fraction of rows that are NULL.
	NullFrac float64
	// Lo and Hi bound the values (as float64: numbers, and times in
	// microseconds since the epoch) when HasRange.
	Lo, Hi   float64
	HasRange bool
}

// Estimate is a node's estimated output.
type Estimate struct {
	Rows float64
	Cols []Col
}

// StatsFunc returns a table's statistics with distinct counts for the named
// columns, or nil (catalog.Catalog.StatsOf).
type StatsFunc func(t *catalog.Table, distinct []string) *catalog.TableStats

// Estimator estimates the nodes of one plan; it remembers what it
// computed, as plan nodes are immutable.
type Estimator struct {
	stats StatsFunc
	memo  map[logical.Node]*Estimate
	// want: the columns of each scan whose distinct counts are asked of
	// the statistics (they cost a read of a sample of the column).
	want map[*logical.Scan]map[int]bool
}

// New returns an estimator reading table statistics from stats (nil: the
// defaults everywhere).
func New(stats StatsFunc) *Estimator {
	return &Estimator{stats: stats, memo: map[logical.Node]*Estimate{}, want: map[*logical.Scan]map[int]bool{}}
}

// Want asks for the distinct counts of columns cols of scan s (indexes into
// its output): the columns a join or a filter compares. Other columns have
// what the table's metadata says (ranges, NULLs), which costs nothing.
func (e *Estimator) Want(s *logical.Scan, cols ...int) {
	w := e.want[s]
	if w == nil {
		w = map[int]bool{}
		e.want[s] = w
	}
	added := false
	for _, c := range cols {
		if !w[c] {
			w[c], added = true, true
		}
	}
	if added && e.memo[s] != nil {
		clear(e.memo) // estimates above s change
	}
}

// Rows is n's estimated row count.
func (e *Estimator) Rows(n logical.Node) float64 { return e.Estimate(n).Rows }

// Estimate is n's estimated output.
func (e *Estimator) Estimate(n logical.Node) *Estimate {
	if est, ok := e.memo[n]; ok {
		return est
	}
	est := e.estimate(n)
	est.Rows = max(est.Rows, 0)
	for i := range est.Cols {
		c := &est.Cols[i]
		if c.Distinct > est.Rows {
			c.Distinct = est.Rows
		}
	}
	e.memo[n] = est
	return est
}

func (e *Estimator) estimate(n logical.Node) *Estimate {
	switch x := n.(type) {
	case *logical.Scan:
		return e.scan(x)
	case *logical.Values:
		return &Estimate{Rows: 1}
	case *logical.Filter:
		in := e.Estimate(x.Input)
		sel := Selectivity(x.Pred, in)
		return Filtered(in, x.Pred, sel)
	case *logical.Project:
		in := e.Estimate(x.Input)
		out := &Estimate{Rows: in.Rows, Cols: make([]Col, len(x.Exprs))}
		for i, ex := range x.Exprs {
			out.Cols[i] = exprCol(ex, in)
		}
		return out
	case *logical.Join:
		l, r := e.Estimate(x.Left), e.Estimate(x.Right)
		if x.Kind.LeftOnly() {
			return leftOnly(x, l, r)
		}
		out := &Estimate{Rows: l.Rows * r.Rows, Cols: append(append([]Col(nil), l.Cols...), r.Cols...)}
		if x.On != nil {
			out.Rows *= joinSelectivity(x.On, l, r, out)
		}
		if x.Kind == logical.LeftJoin {
			out.Rows = max(out.Rows, l.Rows)
		}
		return out
	case *logical.Aggregate:
		in := e.Estimate(x.Input)
		groups := GroupRows(x.Group, in)
		out := &Estimate{Rows: groups}
		for _, g := range x.Group {
			out.Cols = append(out.Cols, exprCol(g, in))
		}
		if x.Window != nil {
			out.Cols = append(out.Cols, Col{}, Col{})
		}
		for range x.Aggs {
			out.Cols = append(out.Cols, Col{Distinct: groups})
		}
		return out
	case *logical.Limit:
		in := e.Estimate(x.Input)
		rows := max(in.Rows-float64(x.Offset), 0)
		if x.N != logical.NoLimit {
			rows = min(rows, float64(x.N))
		}
		return &Estimate{Rows: rows, Cols: in.Cols}
	case *logical.Union:
		out := &Estimate{}
		for i, c := range x.Inputs {
			in := e.Estimate(c)
			out.Rows += in.Rows
			if i == 0 {
				out.Cols = make([]Col, len(in.Cols))
			}
			for j := range out.Cols {
				if j < len(in.Cols) {
					out.Cols[j].Distinct += in.Cols[j].Distinct
				}
			}
		}
		return out
	case *logical.LateralModel:
		in := e.Estimate(x.Input)
		ratio := 1.0
		if x.Model != nil {
			ratio = x.Model.Ratio()
		}
		out := &Estimate{Rows: in.Rows * ratio, Cols: append([]Col(nil), in.Cols...)}
		for range x.Out {
			out.Cols = append(out.Cols, Col{})
		}
		return out
	}
	// Sort, Sink, WindowFuncs, Adapt and what comes later: the input's
	// rows; columns beyond the input's are unknown.
	ch := n.Children()
	if len(ch) == 0 {
		return &Estimate{Rows: DefaultRows, Cols: make([]Col, n.Schema().NumFields())}
	}
	in := e.Estimate(ch[0])
	cols := make([]Col, n.Schema().NumFields())
	copy(cols, in.Cols)
	return &Estimate{Rows: in.Rows, Cols: cols}
}

func (e *Estimator) scan(s *logical.Scan) *Estimate {
	src := s.SourceColumns()
	out := &Estimate{Rows: DefaultRows, Cols: make([]Col, len(s.Columns))}
	if s.Table == nil || e.stats == nil {
		return out
	}
	var names []string
	for i, c := range s.Columns {
		if c < len(src) && e.want[s][i] {
			names = append(names, src[c].Name)
		}
	}
	st := e.stats(s.Table, names)
	if st == nil {
		return out
	}
	out.Rows = st.Rows
	for i, c := range s.Columns {
		if c >= len(src) {
			continue
		}
		cs := st.Column(src[c].Name)
		if cs == nil {
			continue
		}
		col := Col{Distinct: cs.Distinct}
		if st.Rows > 0 {
			col.NullFrac = cs.Nulls / st.Rows
		}
		if cs.HasRange {
			lo, ok1 := Number(cs.Min)
			hi, ok2 := Number(cs.Max)
			if ok1 && ok2 && lo <= hi {
				col.Lo, col.Hi, col.HasRange = lo, hi, true
			}
		}
		out.Cols[i] = col
	}
	return out
}

// leftOnly estimates a semi, anti or mark join: the share of the left rows
// some right row matches is the share of the left's key values the right
// has, min(1, Dr/Dl) (containment again), times the selectivity of what is
// not a key equality.
func leftOnly(x *logical.Join, l, r *Estimate) *Estimate {
	both := &Estimate{Rows: l.Rows * r.Rows, Cols: append(append([]Col(nil), l.Cols...), r.Cols...)}
	out := &Estimate{Rows: l.Rows, Cols: append([]Col(nil), l.Cols...)}
	if x.Kind == logical.MarkJoin {
		out.Cols = append(out.Cols, Col{Distinct: 2})
		return out
	}
	matched := 0.5
	if x.On != nil {
		// joinSelectivity x rows is the matching pairs; a left row has at
		// least one when the right has its key.
		pairs := joinSelectivity(x.On, l, r, both) * l.Rows * r.Rows
		perLeft := pairs / max(l.Rows, 1)
		matched = min(perLeft, 1)
	}
	if x.Kind == logical.AntiJoin {
		matched = 1 - matched
	}
	return Filtered(out, nil, matched)
}

// joinSelectivity is the fraction of the pairs of l and r that on keeps.
// The equalities of a column of each side together keep 1/max(Dl, Dr), D
// being a side's distinct key combinations: the product of its keys'
// distinct counts, at most its rows (two keys of one table are rarely
// independent: partsupp's part and supplier keys make 800,000 pairs, not
// 200,000 x 10,000). Other conjuncts multiply by their selectivity.
func joinSelectivity(on expr.Expr, l, r, both *Estimate) float64 {
	nl := len(l.Cols)
	dl, dr, keys := 1.0, 1.0, 0
	nulls := 1.0
	sel := 1.0
	for _, c := range Conjuncts(on) {
		call, ok := c.(*expr.Call)
		if ok && call.Func == "equal" && len(call.Args) == 2 {
			a, aok := uncast(call.Args[0]).(*expr.Column)
			b, bok := uncast(call.Args[1]).(*expr.Column)
			if aok && bok && (a.Index < nl) != (b.Index < nl) && a.Index < len(both.Cols) && b.Index < len(both.Cols) {
				if b.Index < nl {
					a, b = b, a
				}
				// A key of unknown distinct count counts as unique (a
				// key of its table), as the join order assumes.
				ca, cb := both.Cols[a.Index], both.Cols[b.Index]
				da, db := ca.Distinct, cb.Distinct
				if da <= 0 {
					da = max(l.Rows, 1)
				}
				if db <= 0 {
					db = max(r.Rows, 1)
				}
				dl, dr, keys = dl*da, dr*db, keys+1
				nulls *= (1 - ca.NullFrac) * (1 - cb.NullFrac)
				continue
			}
		}
		sel *= Selectivity(c, both)
	}
	if keys > 0 {
		dl, dr = min(dl, max(l.Rows, 1)), min(dr, max(r.Rows, 1))
		sel *= nulls / max(dl, dr, 1)
	}
	return sel
}

// Filtered is in after a filter of selectivity sel: rows scale, and each
// column keeps the distinct values that some kept row holds (Yao's formula:
// of d values spread evenly over n rows, a random k rows hold
// d (1 - (1 - k/n)^(n/d)) of them). A column the predicate fixes to one
// value (col = constant) keeps one.
func Filtered(in *Estimate, pred expr.Expr, sel float64) *Estimate {
	out := &Estimate{Rows: in.Rows * sel, Cols: make([]Col, len(in.Cols))}
	fixed := map[int]bool{}
	for _, c := range Conjuncts(pred) {
		if col, _, ok := colConst(c, "equal"); ok {
			fixed[col] = true
		}
	}
	for i, c := range in.Cols {
		if c.Distinct > 0 && in.Rows > 0 {
			per := in.Rows / c.Distinct
			c.Distinct *= 1 - math.Pow(1-min(sel, 1), per)
			if fixed[i] {
				c.Distinct = min(c.Distinct, 1)
			}
		}
		out.Cols[i] = c
	}
	return out
}

// GroupRows is the number of groups of keys over in: the product of their
// distinct counts (a key of unknown count: a tenth of the rows), at most the
// input's rows; one row without keys.
func GroupRows(keys []expr.Expr, in *Estimate) float64 {
	if len(keys) == 0 {
		return 1
	}
	groups := 1.0
	for _, g := range keys {
		d := exprCol(g, in).Distinct
		if d <= 0 {
			d = max(in.Rows/10, 1)
		}
		groups *= d
	}
	return min(groups, max(in.Rows, 1))
}

// exprCol is what is known of an expression's values: a column's own, or
// (through casts) its column's; nothing for others.
func exprCol(e expr.Expr, in *Estimate) Col {
	if c, ok := uncast(e).(*expr.Column); ok && c.Index < len(in.Cols) {
		return in.Cols[c.Index]
	}
	if l, ok := e.(*expr.Literal); ok {
		if l.Value == nil {
			return Col{NullFrac: 1}
		}
		return Col{Distinct: 1}
	}
	return Col{}
}

// Conjuncts lists the AND-ed parts of e.
func Conjuncts(e expr.Expr) []expr.Expr {
	if e == nil {
		return nil
	}
	if l, ok := e.(*expr.Logic); ok && l.Op == expr.OpAnd {
		var out []expr.Expr
		for _, a := range l.Args {
			out = append(out, Conjuncts(a)...)
		}
		return out
	}
	return []expr.Expr{e}
}

func uncast(e expr.Expr) expr.Expr {
	for {
		c, ok := e.(*expr.Cast)
		if !ok {
			return e
		}
		e = c.Expr
	}
}

// Number is a value on the line ranges are measured on: numbers as they
// are, times in microseconds since the epoch; false for others (strings).
func Number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case int:
		return float64(x), true
	case float64:
		return x, !math.IsNaN(x)
	case float32:
		return float64(x), true
	case time.Time:
		return float64(x.UnixMicro()), true
	}
	return 0, false
}
