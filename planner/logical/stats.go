package logical

import (
	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/planner/expr"
)

// Selectivity estimates the fraction of rows a predicate keeps, with the
// textbook defaults (System R, PostgreSQL) since streams come without
// histograms: equality 0.1, ranges 1/3, BETWEEN 1/4, LIKE 0.1, IS NULL 0.01;
// AND multiplies, OR adds minus the overlap, NOT complements.
func Selectivity(e expr.Expr) float64 { return SelectivityWith(e, nil) }

// ValueFraction says which fraction of rows have value v in column c, when
// that was measured (a model output's class frequencies in the catalog).
type ValueFraction func(c *expr.Column, v any) (float64, bool)

// SelectivityWith is Selectivity with measured value fractions for
// equalities and IN lists of a column against constants.
func SelectivityWith(e expr.Expr, known ValueFraction) float64 {
	Selectivity := func(e expr.Expr) float64 { return SelectivityWith(e, known) }
	if known != nil {
		if f, ok := measuredFraction(e, known); ok {
			return f
		}
	}
	switch x := e.(type) {
	case nil:
		return 1
	case *expr.Literal:
		if b, ok := x.Value.(bool); ok && !b {
			return 0
		}
		if x.Value == nil {
			return 0
		}
		return 1
	case *expr.Logic:
		if x.Op == expr.OpAnd {
			s := 1.0
			for _, a := range x.Args {
				s *= Selectivity(a)
			}
			return s
		}
		s := 0.0
		for _, a := range x.Args {
			t := Selectivity(a)
			s = s + t - s*t
		}
		return s
	case *expr.Not:
		return 1 - Selectivity(x.Expr)
	case *expr.IsNull:
		if x.Negated {
			return 0.99
		}
		return 0.01
	case *expr.Between:
		if x.Negated {
			return 0.75
		}
		return 0.25
	case *expr.Like:
		if x.Negated {
			return 0.9
		}
		return 0.1
	case *expr.In:
		s := min(0.1*float64(len(x.List)), 0.5)
		if x.Negated {
			return 1 - s
		}
		return s
	case *expr.Call:
		switch x.Func {
		case "=", "eq", "equal":
			return 0.1
		case "<>", "!=", "ne", "not_equal":
			return 0.9
		case "<", "<=", ">", ">=", "lt", "le", "gt", "ge", "less", "less_equal", "greater", "greater_equal":
			return 1.0 / 3
		}
	}
	return 0.5
}

// measuredFraction is the fraction an equality, inequality or IN list of a
// column against constants keeps, when known covers every constant.
func measuredFraction(e expr.Expr, known ValueFraction) (float64, bool) {
	colLit := func(a, b expr.Expr) (*expr.Column, any, bool) {
		a, b = uncast(a), uncast(b)
		if c, ok := a.(*expr.Column); ok {
			if l, ok := b.(*expr.Literal); ok {
				return c, l.Value, true
			}
		}
		if c, ok := b.(*expr.Column); ok {
			if l, ok := a.(*expr.Literal); ok {
				return c, l.Value, true
			}
		}
		return nil, nil, false
	}
	switch x := e.(type) {
	case *expr.Call:
		if len(x.Args) != 2 {
			return 0, false
		}
		c, v, ok := colLit(x.Args[0], x.Args[1])
		if !ok {
			return 0, false
		}
		f, ok := known(c, v)
		if !ok {
			return 0, false
		}
		switch x.Func {
		case "=", "eq", "equal":
			return f, true
		case "<>", "!=", "ne", "not_equal":
			return 1 - f, true
		}
	case *expr.In:
		c, ok := uncast(x.Expr).(*expr.Column)
		if !ok {
			return 0, false
		}
		sum := 0.0
		for _, item := range x.List {
			l, ok := uncast(item).(*expr.Literal)
			if !ok {
				return 0, false
			}
			f, ok := known(c, l.Value)
			if !ok {
				return 0, false
			}
			sum += f
		}
		if x.Negated {
			return 1 - sum, true
		}
		return sum, true
	}
	return 0, false
}

// uncast looks through the casts the binder adds to coerce arguments.
func uncast(e expr.Expr) expr.Expr {
	for {
		c, ok := e.(*expr.Cast)
		if !ok {
			return e
		}
		e = c.Expr
	}
}

// EstimatedBytes is a column's size when nothing is measured: its fixed width,
// 4 bytes per tensor element, 32 for strings, 1 KiB for blobs.
func EstimatedBytes(f arrow.Field) float64 {
	switch t := f.Type.(type) {
	case *arrow.FixedSizeListType:
		return float64(t.Len()) * EstimatedBytes(arrow.Field{Type: t.Elem()})
	case *arrow.StringType, *arrow.LargeStringType:
		return 32
	case *arrow.BinaryType, *arrow.LargeBinaryType:
		return 1024
	case arrow.FixedWidthDataType:
		if b := t.BitWidth(); b >= 8 {
			return float64(b / 8)
		}
		return 1
	}
	return 8
}

// IsPayload reports whether a column is bulk data (tensor, blob, string) as
// opposed to a fixed-width scalar such as an id or timestamp.
func IsPayload(f arrow.Field) bool {
	switch f.Type.(type) {
	case *arrow.FixedSizeListType, *arrow.StringType, *arrow.LargeStringType, *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.ListType:
		return true
	}
	return false
}
