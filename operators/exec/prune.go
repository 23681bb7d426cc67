package exec

import (
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/decimal128"

	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// noteBounds keeps the conjuncts of a filter right over scan s that compare
// a column with a constant, as sources.Bounds by column name: a Parquet
// scan skips the row groups whose min/max statistics refute one. The filter
// itself still runs, so a bound only has to be implied by the predicate.
func (b *builder) noteBounds(s *logical.Scan, pred expr.Expr) {
	var bounds []sources.Bound
	schema := s.Schema()
	var walk func(e expr.Expr)
	walk = func(e expr.Expr) {
		switch x := e.(type) {
		case *expr.Logic:
			if x.Op == expr.OpAnd {
				for _, a := range x.Args {
					walk(a)
				}
			}
		case *expr.Between:
			if !x.Negated {
				walk(&expr.Call{Func: "greater_equal", Args: []expr.Expr{x.Expr, x.Lo}})
				walk(&expr.Call{Func: "less_equal", Args: []expr.Expr{x.Expr, x.Hi}})
			}
		case *expr.Call:
			op, ok := map[string]string{"less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=", "equal": "="}[x.Func]
			if !ok || len(x.Args) != 2 {
				return
			}
			col, c := boundColumn(x.Args[0]), constValue(x.Args[1])
			if col == nil || c == nil {
				// constant op column: the mirror image
				col, c = boundColumn(x.Args[1]), constValue(x.Args[0])
				op = map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}[op]
			}
			if col == nil || c == nil || col.Index >= schema.NumFields() {
				return
			}
			bounds = append(bounds, sources.Bound{Column: schema.Field(col.Index).Name, Op: op, Value: c})
		}
	}
	walk(pred)
	if len(bounds) == 0 {
		return
	}
	if b.bounds == nil {
		b.bounds = map[*logical.Scan][]sources.Bound{}
	}
	b.bounds[s] = bounds
}

// boundColumn is the column a comparison reads, itself or through a cast
// that keeps its values exactly and in order (a widening: INT to BIGINT, to
// DOUBLE or to a DECIMAL; a DECIMAL to one of more digits or a larger scale;
// a DATE to a TIMESTAMP), so that the constant bounds the stored values;
// nil otherwise.
func boundColumn(e expr.Expr) *expr.Column {
	switch x := e.(type) {
	case *expr.Column:
		return x
	case *expr.Cast:
		if c, ok := x.Expr.(*expr.Column); ok && widening(c.DataType, x.To) {
			return c
		}
	}
	return nil
}

func widening(from, to arrow.DataType) bool {
	switch {
	case from.ID() == arrow.DATE32 && to.ID() == arrow.TIMESTAMP:
		return true
	case expr.IsInteger(from) && (expr.IsInteger(to) || expr.IsFloat(to) || expr.IsDecimal(to)):
		return true
	case expr.IsFloat(from) && expr.IsFloat(to):
		return true
	case expr.IsDecimal(from) && expr.IsFloat(to):
		return true
	case expr.IsDecimal(from) && expr.IsDecimal(to):
		return to.(*arrow.Decimal128Type).Scale >= from.(*arrow.Decimal128Type).Scale
	}
	return false
}

func numeric(t arrow.DataType) bool { return expr.IsNumeric(t) }

// constValue is a literal's value as a Bound takes it: int64, float64, a
// DECIMAL as its exact *big.Rat, string or time.Time; nil for anything else.
// A cast of a literal is looked through only between numbers (a rounding
// cast to an integer is not: its float value then fits no integer column's
// statistics and bounds nothing).
func constValue(e expr.Expr) any {
	if c, ok := e.(*expr.Cast); ok {
		if !numeric(c.To) || (expr.IsInteger(c.To) && !expr.IsInteger(c.Expr.Type())) {
			return nil
		}
		e = c.Expr
	}
	l, ok := e.(*expr.Literal)
	if !ok {
		return nil
	}
	switch v := l.Value.(type) {
	case int64, float64, string:
		return v
	case int32:
		return int64(v)
	case time.Time:
		return v
	case decimal128.Num:
		return expr.DecimalRat(v, l.DataType.(*arrow.Decimal128Type).Scale)
	}
	return nil
}
