package functions

import (
	"fmt"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/arrow/scalar"

	"github.com/tierflow/tierflow/planner/expr"
)

// ScalarOf converts a Go value (nil, bool, int64, float64, string, time.Time,
// time.Duration, []byte, as in expr.Literal) to an Arrow scalar of type t. Integers
// convert to DOUBLE when t asks for it.
func ScalarOf(v any, t arrow.DataType) (scalar.Scalar, error) {
	if v == nil {
		return scalar.MakeNullScalar(t), nil
	}
	switch t.ID() {
	case arrow.BOOL:
		if b, ok := v.(bool); ok {
			return scalar.NewBooleanScalar(b), nil
		}
	case arrow.INT64:
		if i, ok := v.(int64); ok {
			return scalar.NewInt64Scalar(i), nil
		}
	case arrow.INT32:
		if i, ok := v.(int64); ok {
			return scalar.NewInt32Scalar(int32(i)), nil
		}
	case arrow.FLOAT32:
		switch x := v.(type) {
		case float64:
			return scalar.NewFloat32Scalar(float32(x)), nil
		case int64:
			return scalar.NewFloat32Scalar(float32(x)), nil
		}
	case arrow.FLOAT64:
		switch x := v.(type) {
		case float64:
			return scalar.NewFloat64Scalar(x), nil
		case int64:
			return scalar.NewFloat64Scalar(float64(x)), nil
		}
	case arrow.STRING:
		if s, ok := v.(string); ok {
			return scalar.NewStringScalar(s), nil
		}
	case arrow.TIMESTAMP:
		if ts, ok := v.(time.Time); ok {
			return scalar.NewTimestampScalar(arrow.Timestamp(ts.UnixMicro()), t), nil
		}
	case arrow.DURATION:
		if d, ok := v.(time.Duration); ok {
			return scalar.NewDurationScalar(arrow.Duration(d/time.Microsecond), t), nil
		}
	case arrow.DECIMAL128:
		switch x := v.(type) {
		case decimal128.Num:
			return scalar.NewDecimal128Scalar(x, t), nil
		case int64:
			n, ok := expr.RescaleDecimal(decimal128.FromI64(x), 0, t.(*arrow.Decimal128Type).Scale, t.(*arrow.Decimal128Type).Precision)
			if ok {
				return scalar.NewDecimal128Scalar(n, t), nil
			}
		case float64:
			if n, ok := expr.DecimalFromFloat(x, t.(*arrow.Decimal128Type).Scale); ok {
				return scalar.NewDecimal128Scalar(n, t), nil
			}
		}
	case arrow.DATE32:
		if ts, ok := v.(time.Time); ok {
			return scalar.NewDate32Scalar(arrow.Date32FromTime(ts)), nil
		}
	case arrow.INTERVAL_MONTH_DAY_NANO:
		if iv, ok := v.(arrow.MonthDayNanoInterval); ok {
			return scalar.NewMonthDayNanoIntervalScalar(iv), nil
		}
	case arrow.BINARY:
		if b, ok := v.([]byte); ok {
			return scalar.NewBinaryScalar(memory.NewBufferBytes(b), t), nil
		}
	}
	return nil, fmt.Errorf("functions: no %s scalar for %T %v", t, v, v)
}

// ArrayOf builds an array of type t from Go values (see ScalarOf).
func ArrayOf(mem memory.Allocator, t arrow.DataType, vals []any) (arrow.Array, error) {
	b := array.NewBuilder(mem, t)
	defer b.Release()
	for _, v := range vals {
		if v == nil {
			b.AppendNull()
			continue
		}
		s, err := ScalarOf(v, t)
		if err != nil {
			return nil, err
		}
		switch s := s.(type) {
		case *scalar.Boolean:
			b.(*array.BooleanBuilder).Append(s.Value)
		case *scalar.Int64:
			b.(*array.Int64Builder).Append(s.Value)
		case *scalar.Float64:
			b.(*array.Float64Builder).Append(s.Value)
		case *scalar.Int32:
			b.(*array.Int32Builder).Append(s.Value)
		case *scalar.Float32:
			b.(*array.Float32Builder).Append(s.Value)
		case *scalar.String:
			b.(*array.StringBuilder).Append(string(s.Value.Bytes()))
		case *scalar.Timestamp:
			b.(*array.TimestampBuilder).Append(s.Value)
		case *scalar.Duration:
			b.(*array.DurationBuilder).Append(s.Value)
		case *scalar.Decimal128:
			b.(*array.Decimal128Builder).Append(s.Value)
		case *scalar.Date32:
			b.(*array.Date32Builder).Append(s.Value)
		case *scalar.MonthDayNanoInterval:
			b.(*array.MonthDayNanoIntervalBuilder).Append(s.Value)
		case *scalar.Binary:
			b.(*array.BinaryBuilder).Append(s.Value.Bytes())
		}
		if r, ok := s.(scalar.Releasable); ok {
			r.Release()
		}
	}
	return b.NewArray(), nil
}

// ValueAt returns row i of a as a Go value: nil, bool, int64 (any integer type),
// float64 (any float type), string, time.Time (timestamps, dates) or
// time.Duration. Sinks and tests use it; hot paths do not.
func ValueAt(a arrow.Array, i int) any {
	if a.IsNull(i) || a.DataType().ID() == arrow.NULL {
		return nil
	}
	switch a := a.(type) {
	case *array.Boolean:
		return a.Value(i)
	case *array.Int8:
		return int64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	case *array.Uint8:
		return int64(a.Value(i))
	case *array.Uint16:
		return int64(a.Value(i))
	case *array.Uint32:
		return int64(a.Value(i))
	case *array.Uint64:
		return int64(a.Value(i))
	case *array.Float32:
		return float64(a.Value(i))
	case *array.Float64:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return a.Value(i).ToTime(unit).UTC()
	case *array.Date32:
		return a.Value(i).ToTime().UTC()
	case *array.Date64:
		return a.Value(i).ToTime().UTC()
	case *array.Duration:
		unit := a.DataType().(*arrow.DurationType).Unit
		return time.Duration(a.Value(i)) * unit.Multiplier()
	case *array.Decimal128:
		return a.Value(i)
	case *array.MonthDayNanoInterval:
		return a.Value(i)
	}
	return a.ValueStr(i)
}
