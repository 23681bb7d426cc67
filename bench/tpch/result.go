package tpch

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// Result is a query's rows with every value normalised so that two engines'
// answers compare: numbers (integers, decimals, doubles) as float64, dates
// and timestamps as time.Time in UTC, strings as strings, NULL as nil.
type Result [][]any

// ArrowValue normalises row r of a.
func ArrowValue(a arrow.Array, r int) (any, error) {
	if a.IsNull(r) {
		return nil, nil
	}
	switch a := a.(type) {
	case *array.Null:
		return nil, nil
	case *array.Int8:
		return float64(a.Value(r)), nil
	case *array.Int16:
		return float64(a.Value(r)), nil
	case *array.Int32:
		return float64(a.Value(r)), nil
	case *array.Int64:
		return float64(a.Value(r)), nil
	case *array.Uint32:
		return float64(a.Value(r)), nil
	case *array.Uint64:
		return float64(a.Value(r)), nil
	case *array.Float32:
		return float64(a.Value(r)), nil
	case *array.Float64:
		return a.Value(r), nil
	case *array.Decimal128:
		return a.Value(r).ToFloat64(a.DataType().(*arrow.Decimal128Type).Scale), nil
	case *array.String:
		return a.Value(r), nil
	case *array.LargeString:
		return a.Value(r), nil
	case *array.Boolean:
		return a.Value(r), nil
	case *array.Date32:
		return a.Value(r).ToTime().UTC(), nil
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return a.Value(r).ToTime(unit).UTC(), nil
	case *array.Dictionary:
		return ArrowValue(a.Dictionary(), a.GetValueIndex(r))
	}
	return nil, fmt.Errorf("type %s not compared by the bench", a.DataType())
}

// AppendRecord appends rec's rows, normalised, to res.
func (res Result) AppendRecord(rec arrow.Record) (Result, error) {
	for r := 0; r < int(rec.NumRows()); r++ {
		row := make([]any, rec.NumCols())
		for j, col := range rec.Columns() {
			v, err := ArrowValue(col, r)
			if err != nil {
				return res, fmt.Errorf("column %s: %w", rec.ColumnName(j), err)
			}
			row[j] = v
		}
		res = append(res, row)
	}
	return res, nil
}

// Tolerance is the relative difference two numbers of an answer may have:
// sums of doubles taken in a different order differ in their last bits, and
// an average of decimals is a double on one engine and an exact quotient
// rounded on another. DuckDB's own TPC-H answer checks allow as much.
const Tolerance = 1e-9

// Compare says how got differs from want, or "" when they agree: the same
// rows in the same order (every TPC-H query orders its result or returns
// one row), numbers equal within Tolerance.
func Compare(got, want Result) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d rows, want %d", len(got), len(want))
	}
	for i := range got {
		if len(got[i]) != len(want[i]) {
			return fmt.Sprintf("row %d: %d columns, want %d", i+1, len(got[i]), len(want[i]))
		}
		for j := range got[i] {
			if !SameValue(got[i][j], want[i][j]) {
				return fmt.Sprintf("row %d column %d: %s, want %s", i+1, j+1, show(got[i][j]), show(want[i][j]))
			}
		}
	}
	return ""
}

func show(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case time.Time:
		return v.Format("2006-01-02 15:04:05")
	case string:
		return fmt.Sprintf("%q", v)
	case float64:
		return fmt.Sprintf("%.10g", v)
	}
	return fmt.Sprint(v)
}

// SameValue compares two normalised values.
func SameValue(a, b any) bool {
	fa, oka := a.(float64)
	fb, okb := b.(float64)
	if oka && okb {
		if math.IsNaN(fa) || math.IsNaN(fb) {
			return math.IsNaN(fa) && math.IsNaN(fb)
		}
		return fa == fb || math.Abs(fa-fb) <= Tolerance*math.Max(math.Abs(fa), math.Abs(fb))
	}
	ta, oka := a.(time.Time)
	tb, okb := b.(time.Time)
	if oka && okb {
		return ta.Equal(tb)
	}
	sa, oka := a.(string)
	sb, okb := b.(string)
	if oka && okb {
		// CHAR columns come back padded from some engines.
		return strings.TrimRight(sa, " ") == strings.TrimRight(sb, " ")
	}
	return a == b
}
