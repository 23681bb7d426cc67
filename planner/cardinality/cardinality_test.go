package cardinality

import (
	"math"
	"testing"
	"time"

	"github.com/tierflow/tierflow/planner/expr"
)

func col(i int, t expr.Expr) *expr.Column {
	return &expr.Column{Index: i, DataType: t.Type()}
}

func lit(v any) *expr.Literal {
	l, err := expr.NewLiteral(v)
	if err != nil {
		panic(err)
	}
	return l
}

func call(fn string, a, b expr.Expr) *expr.Call {
	return &expr.Call{Func: fn, Args: []expr.Expr{a, b}, DataType: expr.Bool}
}

// Selectivities read the columns' statistics: an equality 1/distinct (none
// outside the range), a range its share of [min, max] (times too, and
// constants folded: a timestamp shifted by an interval), IN k/distinct,
// NULLs excluded; AND multiplies, OR adds less the overlap; a column
// without statistics takes the textbook default.
func TestSelectivityFromStatistics(t *testing.T) {
	day := func(s string) time.Time { tm, _ := time.Parse("2006-01-02", s); return tm }
	lo, hi := day("1992-01-01"), day("1998-12-31")
	in := &Estimate{Rows: 1000, Cols: []Col{
		{Distinct: 50, Lo: 1, Hi: 50, HasRange: true}, // 0: quantity
		{Distinct: 7}, // 1: mode
		{Distinct: 2500, Lo: float64(lo.UnixMicro()), Hi: float64(hi.UnixMicro()), HasRange: true}, // 2: date
		{Distinct: 100, NullFrac: 0.5}, // 3: half NULL
		{},                             // 4: unknown
	}}
	q, mode, date, half, unknown := col(0, lit(1.0)), col(1, lit("")), col(2, lit(lo)), col(3, lit(int64(1))), col(4, lit(int64(1)))
	year := &expr.Call{Func: "add", DataType: expr.Timestamp, Args: []expr.Expr{lit(day("1994-01-01")), lit(365 * 24 * time.Hour)}}
	for _, tc := range []struct {
		name string
		e    expr.Expr
		want float64
	}{
		{"equality", call("equal", q, lit(24.0)), 1.0 / 50},
		{"outside the range", call("equal", q, lit(99.0)), 0},
		{"less than", call("less", q, lit(25.5)), 24.5 / 49},
		{"constant first", call("greater", lit(25.5), q), 24.5 / 49},
		{"between", &expr.Between{Expr: q, Lo: lit(1.0), Hi: lit(11.0)}, 10.0 / 49},
		{"in", &expr.In{Expr: mode, List: []expr.Expr{lit("MAIL"), lit("SHIP")}}, 2.0 / 7},
		{"not equal", call("not_equal", mode, lit("AIR")), 6.0 / 7},
		{"a year of dates", &expr.Logic{Op: expr.OpAnd, Args: []expr.Expr{call("greater_equal", date, lit(day("1994-01-01"))), call("less", date, year)}},
			(float64(hi.UnixMicro()) - float64(day("1994-01-01").UnixMicro())) / (float64(hi.UnixMicro()) - float64(lo.UnixMicro())) *
				(float64(day("1995-01-01").UnixMicro()) - float64(lo.UnixMicro())) / (float64(hi.UnixMicro()) - float64(lo.UnixMicro()))},
		{"NULLs do not equal", call("equal", half, lit(int64(3))), 0.5 / 100},
		{"is null", &expr.IsNull{Expr: half}, 0.5},
		{"or", &expr.Logic{Op: expr.OpOr, Args: []expr.Expr{call("equal", mode, lit("A")), call("equal", mode, lit("B"))}}, 1.0/7 + 1.0/7 - 1.0/49},
		{"no statistics", call("equal", unknown, lit(int64(3))), 0.1},
	} {
		if got := Selectivity(tc.e, in); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %s keeps %g, want %g", tc.name, tc.e, got, tc.want)
		}
	}
}

// A filter keeps the distinct values some kept row holds (Yao), one for a
// column it fixes; a GROUP BY has the product of its keys' counts, at most
// its rows.
func TestFilteredAndGroups(t *testing.T) {
	in := &Estimate{Rows: 1e6, Cols: []Col{{Distinct: 1e6}, {Distinct: 10}, {Distinct: 1000}}}
	eq := call("equal", col(1, lit(int64(1))), lit(int64(3)))
	out := Filtered(in, eq, 0.1)
	if out.Rows != 1e5 || out.Cols[1].Distinct != 1 {
		t.Fatalf("filtered: rows %v, fixed column %v distinct", out.Rows, out.Cols[1].Distinct)
	}
	if d := out.Cols[0].Distinct; math.Abs(d-1e6*0.1) > 1 {
		t.Fatalf("a unique column keeps %v distinct, want 100000", d)
	}
	if d := out.Cols[2].Distinct; d < 999 {
		t.Fatalf("a column of 1000 values over 100000 kept rows keeps %v, want ~1000", d)
	}
	keys := []expr.Expr{col(1, lit(int64(1))), col(2, lit(int64(1)))}
	if g := GroupRows(keys, in); g != 10*1000 {
		t.Fatalf("groups %v, want 10000", g)
	}
	if g := GroupRows([]expr.Expr{col(0, lit(int64(1))), col(2, lit(int64(1)))}, in); g != 1e6 {
		t.Fatalf("groups %v, want the rows (1e6)", g)
	}
}
