package cardinality

import (
	"math"
	"time"

	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// Selectivity is the fraction of in's rows that pred keeps. Comparisons of a
// column with a constant read the column's statistics: = keeps 1/distinct,
// <> the rest, a range (<, <=, >, >=, BETWEEN) the share of [min, max] it
// covers, IN k/distinct, IS NULL the NULL fraction; an equality of two
// columns keeps 1/max(distinct). What statistics do not cover falls back to
// logical.Selectivity's defaults.
func Selectivity(pred expr.Expr, in *Estimate) float64 {
	s := selectivity(pred, in)
	return min(max(s, 0), 1)
}

func selectivity(pred expr.Expr, in *Estimate) float64 {
	switch x := pred.(type) {
	case nil:
		return 1
	case *expr.Logic:
		if x.Op == expr.OpAnd {
			s := 1.0
			for _, a := range x.Args {
				s *= Selectivity(a, in)
			}
			return s
		}
		s := 0.0
		for _, a := range x.Args {
			t := Selectivity(a, in)
			s = s + t - s*t
		}
		return s
	case *expr.Not:
		return 1 - Selectivity(x.Expr, in)
	case *expr.IsNull:
		if c, ok := column(x.Expr, in); ok && (c.Distinct > 0 || c.NullFrac > 0) {
			if x.Negated {
				return 1 - c.NullFrac
			}
			return c.NullFrac
		}
	case *expr.In:
		if c, ok := column(x.Expr, in); ok && c.Distinct > 0 {
			k := 0
			for _, v := range x.List {
				if _, ok := Const(v); ok {
					k++
				}
			}
			if k == len(x.List) {
				s := min(float64(k)/c.Distinct, 1) * (1 - c.NullFrac)
				if x.Negated {
					return (1 - c.NullFrac) - s
				}
				return s
			}
		}
	case *expr.Between:
		if c, ok := column(x.Expr, in); ok && c.HasRange {
			lo, ok1 := ConstNumber(x.Lo)
			hi, ok2 := ConstNumber(x.Hi)
			if ok1 && ok2 {
				s := rangeShare(c, lo, hi) * (1 - c.NullFrac)
				if x.Negated {
					return (1 - c.NullFrac) - s
				}
				return s
			}
		}
	case *expr.Call:
		if s, ok := callSelectivity(x, in); ok {
			return s
		}
	}
	return logical.Selectivity(pred)
}

func callSelectivity(x *expr.Call, in *Estimate) (float64, bool) {
	if len(x.Args) != 2 {
		return 0, false
	}
	a, b := x.Args[0], x.Args[1]
	ca, aCol := column(a, in)
	cb, bCol := column(b, in)
	switch x.Func {
	case "equal", "not_equal":
		var s float64
		switch {
		case aCol && bCol:
			d := max(ca.Distinct, cb.Distinct)
			if d <= 0 {
				return 0, false
			}
			s = (1 - ca.NullFrac) * (1 - cb.NullFrac) / d
		case aCol || bCol:
			c, other := ca, b
			if !aCol {
				c, other = cb, a
			}
			if _, ok := Const(other); !ok || c.Distinct <= 0 {
				return 0, false
			}
			s = (1 - c.NullFrac) / c.Distinct
			if v, ok := ConstNumber(other); ok && c.HasRange && (v < c.Lo || v > c.Hi) {
				s = 0 // outside every value the column holds
			}
			if x.Func == "not_equal" {
				return (1 - c.NullFrac) - s, true
			}
		default:
			return 0, false
		}
		if x.Func == "not_equal" {
			return 1 - s, true
		}
		return s, true
	case "less", "less_equal", "greater", "greater_equal":
		op := x.Func
		c, other := ca, b
		switch {
		case aCol && !bCol:
		case bCol && !aCol:
			c, other = cb, a
			op = flip(op)
		default:
			return 0, false
		}
		v, ok := ConstNumber(other)
		if !ok || !c.HasRange {
			return 0, false
		}
		var s float64
		switch op {
		case "less", "less_equal":
			s = rangeShare(c, math.Inf(-1), v)
		default:
			s = rangeShare(c, v, math.Inf(1))
		}
		return s * (1 - c.NullFrac), true
	}
	return 0, false
}

func flip(op string) string {
	switch op {
	case "less":
		return "greater"
	case "less_equal":
		return "greater_equal"
	case "greater":
		return "less"
	case "greater_equal":
		return "less_equal"
	}
	return op
}

// rangeShare is the share of a column's [Lo, Hi] that [lo, hi] covers,
// values spread evenly; a column of one value is all in or all out. A range
// that covers any of it keeps at least one value's share.
func rangeShare(c Col, lo, hi float64) float64 {
	lo, hi = max(lo, c.Lo), min(hi, c.Hi)
	if lo > hi {
		return 0
	}
	width := c.Hi - c.Lo
	if width <= 0 {
		return 1
	}
	s := (hi - lo) / width
	if c.Distinct > 0 {
		s = max(s, 1/c.Distinct)
	}
	return min(s, 1)
}

// column is the column e reads (through casts) when e is one.
func column(e expr.Expr, in *Estimate) (Col, bool) {
	if c, ok := uncast(e).(*expr.Column); ok && c.Index < len(in.Cols) {
		return in.Cols[c.Index], true
	}
	return Col{}, false
}

// colConst matches column op constant (either way round): the column index.
func colConst(e expr.Expr, fn string) (int, any, bool) {
	call, ok := e.(*expr.Call)
	if !ok || call.Func != fn || len(call.Args) != 2 {
		return 0, nil, false
	}
	for i := range 2 {
		c, ok := uncast(call.Args[i]).(*expr.Column)
		if !ok {
			continue
		}
		if v, ok := Const(call.Args[1-i]); ok {
			return c.Index, v, true
		}
	}
	return 0, nil, false
}

// ConstNumber is Const on the line ranges are measured on (Number).
func ConstNumber(e expr.Expr) (float64, bool) {
	v, ok := Const(e)
	if !ok {
		return 0, false
	}
	return Number(v)
}

// Const folds a constant expression: literals, and casts and arithmetic
// (+, -, *, /) of them, timestamps shifted by intervals included. false for
// anything that reads a column or that it does not know.
func Const(e expr.Expr) (any, bool) {
	switch x := e.(type) {
	case *expr.Literal:
		return x.Value, x.Value != nil
	case *expr.Cast:
		v, ok := Const(x.Expr)
		if !ok {
			return nil, false
		}
		switch x.To.ID() {
		case expr.Float64.ID():
			f, ok := Number(v)
			if _, isTime := v.(time.Time); isTime {
				return nil, false
			}
			return f, ok
		case expr.Int64.ID():
			switch n := v.(type) {
			case int64:
				return n, true
			case float64:
				return int64(math.Round(n)), true
			}
			return nil, false
		}
		return v, true // a cast Number reads through (widths, time units)
	case *expr.Call:
		if len(x.Args) != 2 {
			return nil, false
		}
		a, ok1 := Const(x.Args[0])
		b, ok2 := Const(x.Args[1])
		if !ok1 || !ok2 {
			return nil, false
		}
		return arith(x.Func, a, b)
	}
	return nil, false
}

func arith(fn string, a, b any) (any, bool) {
	if t, ok := a.(time.Time); ok {
		d, ok := b.(time.Duration)
		if !ok {
			return nil, false
		}
		switch fn {
		case "add":
			return t.Add(d), true
		case "subtract":
			return t.Add(-d), true
		}
		return nil, false
	}
	if ai, ok := a.(int64); ok {
		if bi, ok := b.(int64); ok {
			switch fn {
			case "add":
				return ai + bi, true
			case "subtract":
				return ai - bi, true
			case "multiply":
				return ai * bi, true
			}
		}
	}
	af, ok1 := Number(a)
	bf, ok2 := Number(b)
	if !ok1 || !ok2 {
		return nil, false
	}
	switch fn {
	case "add":
		return af + bf, true
	case "subtract":
		return af - bf, true
	case "multiply":
		return af * bf, true
	case "divide":
		if bf == 0 {
			return nil, false
		}
		return af / bf, true
	}
	return nil, false
}
