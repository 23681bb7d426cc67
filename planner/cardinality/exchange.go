package cardinality

import (
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// What crosses between the workers of a join of two streams split over
// instances on n workers, and whether a side should be broadcast, from the estimates
// the planner has of a stream: its declared RATE (rows a second, through
// the filters under the join, each at its selectivity) and the estimated
// bytes of the columns the join reads (logical.EstimatedBytes).
//
// A hash exchange by the join columns sends each side's rows to the
// instance their key hashes to: of a side's B bytes a second, (n-1)/n
// cross to another worker. A broadcast of one side sends each of its rows
// to the n-1 other workers and leaves the other side's rows where they
// are: B_small x (n-1) cross. The broadcast crosses less when B_small x (n-1) <
// B_other x (n-1)/n, that is B_small < B_other / n; every wide row is
// then in one instance and meets every row of the small side there, so an
// inner join answers each pair once.

// StreamRate is the estimated rows a second of n: the declared RATE of the
// stream it reads through filters and projections, each filter keeping the
// share its selectivity says. 0 when unknown (no RATE, a table, anything
// other than a scan under filters and projections).
func StreamRate(n logical.Node) float64 {
	share := 1.0
	est := New(nil)
	for {
		switch x := n.(type) {
		case *logical.Filter:
			share *= Selectivity(x.Pred, est.Estimate(x.Input))
			n = x.Input
		case *logical.Project:
			n = x.Input
		case *logical.Scan:
			if x.Stream == nil || x.Stream.Rate <= 0 {
				return 0
			}
			return x.Stream.Rate * share
		default:
			return 0
		}
	}
}

// RowBytes is the estimated bytes of one row of n's output.
func RowBytes(n logical.Node) float64 {
	s := n.Schema()
	total := 0.0
	for i := range s.NumFields() {
		total += logical.EstimatedBytes(s.Field(i))
	}
	return total
}

// BroadcastSide is the side of j (0 left, 1 right) to broadcast to the n
// workers whose instances split the other side's rows: an inner join
// whose sides' rates are known, one side's bytes a second under the
// other's over n (above). ok false: keep the hash exchange (always on one
// worker, where nothing crosses).
func BroadcastSide(j *logical.Join, n int) (side int, ok bool) {
	if j.Kind != logical.InnerJoin || n < 2 {
		return 0, false
	}
	var bytes [2]float64
	for s, c := range []logical.Node{j.Left, j.Right} {
		r := StreamRate(c)
		if r <= 0 {
			return 0, false
		}
		bytes[s] = r * RowBytes(c)
	}
	for s := range 2 {
		if bytes[s]*float64(n-1) < bytes[1-s]*float64(n-1)/float64(n) {
			return s, true
		}
	}
	return 0, false
}

// PreAggregates reports whether a GROUP BY a without a window, over a join
// that BroadcastSide would split over n instances (each on a worker of its
// own) by its wide side's rows
// (through filters and projections of plain columns), pays as two phases:
// a partial aggregate on each instance where the join's rows are, and a
// final one its partial rows are exchanged to by the keys. The join's
// output is split as its wide input was, never by a's keys, so one phase
// would exchange every joined row. The rule: a's keys are all columns of
// the broadcast side, so its groups are at most that side's rows (an inner
// join's row carries one row of each side), and every instance sees all of
// them; the rows an instance folds are its share of the wide side's (each
// wide row meets the one row of the small side its key names, the
// key-foreign-key join the containment assumption gives). The partial rows
// then cross in place of the joined rows when the groups per instance are
// at most half the rows per instance: the partial phase folds what the one
// phase would have, the final one folds the partial rows again, and half
// leaves room for the estimates' error.
func PreAggregates(a *logical.Aggregate, n int) bool {
	if a.Window != nil || len(a.Group) == 0 {
		return false
	}
	j, cols := joinColumnsUnder(a.Input, a.Group)
	if j == nil {
		return false
	}
	small, ok := BroadcastSide(j, n)
	if !ok {
		return false
	}
	nl := j.Left.Schema().NumFields()
	for _, c := range cols {
		if (c < nl) != (small == 0) {
			return false
		}
	}
	sides := []logical.Node{j.Left, j.Right}
	groups, rows := StreamRate(sides[small]), StreamRate(sides[1-small])/float64(n)
	return groups <= rows/2
}

// joinColumnsUnder follows the plain columns es reads of n through filters
// and projections down to a join, and returns the join with the columns of
// its output they are; nil when one is computed or there is no join.
func joinColumnsUnder(n logical.Node, es []expr.Expr) (*logical.Join, []int) {
	cols := make([]int, len(es))
	for i, e := range es {
		c, ok := e.(*expr.Column)
		if !ok {
			return nil, nil
		}
		cols[i] = c.Index
	}
	for {
		switch x := n.(type) {
		case *logical.Filter:
			n = x.Input
		case *logical.Project:
			for i, c := range cols {
				if c < 0 || c >= len(x.Exprs) {
					return nil, nil
				}
				col, ok := x.Exprs[c].(*expr.Column)
				if !ok {
					return nil, nil
				}
				cols[i] = col.Index
			}
			n = x.Input
		case *logical.Join:
			return x, cols
		default:
			return nil, nil
		}
	}
}
