package eval

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/internal/arrowx"
	"github.com/tierflow/tierflow/planner/expr"
)

func isFloatType(t arrow.DataType) bool {
	return t.ID() == arrow.FLOAT64 || t.ID() == arrow.FLOAT32 || t.ID() == arrow.FLOAT16
}

// integerRange is the closed range of an integer type, as float64 bounds:
// the lower one is exact, the upper one is the first value above the range
// (2^63 for BIGINT, which float64 holds exactly where 2^63-1 it does not).
func integerRange(t arrow.DataType) (lo, above float64) {
	bits := float64(t.(arrow.FixedWidthDataType).BitWidth())
	if arrow.IsUnsignedInteger(t.ID()) {
		return 0, math.Pow(2, bits)
	}
	return -math.Pow(2, bits-1), math.Pow(2, bits-1)
}

// roundToInteger casts floats to an integer type as DuckDB does: a DOUBLE
// rounded half to even (x::INT of 2.5 is 2), a literal such as 2.5, which
// DuckDB reads as a DECIMAL, half away from zero (CAST(2.5 AS INT) is 3,
// CAST(-2.5 AS INT) is -3); a value outside the type (or NaN, or infinite)
// is an error, not a wrap.
func roundToInteger(mem memory.Allocator, a arrow.Array, to arrow.DataType, halfEven bool) (arrow.Array, error) {
	lo, above := integerRange(to)
	b := array.NewBuilder(mem, to)
	defer b.Release()
	arrowx.Reserve(b, a.Len())
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		var x float64
		switch a := a.(type) {
		case *array.Float64:
			x = a.Value(i)
		case *array.Float32:
			x = float64(a.Value(i))
		case *array.Float16:
			x = float64(a.Value(i).Float32())
		default:
			return nil, fmt.Errorf("cannot cast %s to %s", a.DataType(), expr.TypeName(to))
		}
		r := math.Round(x)
		if halfEven {
			r = math.RoundToEven(x)
		}
		if math.IsNaN(r) || r < lo || r >= above {
			return nil, fmt.Errorf("%w: %v does not fit %s", ErrOutOfRange, x, expr.TypeName(to))
		}
		switch b := b.(type) {
		case *array.Int8Builder:
			b.UnsafeAppend(int8(r))
		case *array.Int16Builder:
			b.UnsafeAppend(int16(r))
		case *array.Int32Builder:
			b.UnsafeAppend(int32(r))
		case *array.Int64Builder:
			b.UnsafeAppend(int64(r))
		case *array.Uint8Builder:
			b.UnsafeAppend(uint8(r))
		case *array.Uint16Builder:
			b.UnsafeAppend(uint16(r))
		case *array.Uint32Builder:
			b.UnsafeAppend(uint32(r))
		case *array.Uint64Builder:
			b.UnsafeAppend(uint64(r))
		}
	}
	return b.NewArray(), nil
}

// formatsAsDuckDB reports whether a cast from t to VARCHAR is written here
// rather than by arrow: DOUBLE and TIMESTAMP, whose text DuckDB spells its
// own way (17.0, not 17; 2026-02-12 18:09:01.25, not ...01.250000Z).
func formatsAsDuckDB(from, to arrow.DataType) bool {
	return to.ID() == arrow.STRING && (from.ID() == arrow.FLOAT64 || from.ID() == arrow.TIMESTAMP)
}

// castToString writes each value of a (DOUBLE or TIMESTAMP) as DuckDB does.
func castToString(mem memory.Allocator, a arrow.Array) arrow.Array {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	arrowx.Reserve(b, a.Len())
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		switch a := a.(type) {
		case *array.Float64:
			b.Append(FormatDouble(a.Value(i)))
		case *array.Timestamp:
			unit := a.DataType().(*arrow.TimestampType).Unit
			b.Append(FormatTimestamp(a.Value(i).ToTime(unit)))
		}
	}
	return b.NewArray()
}

// FormatDouble is DuckDB's text of a DOUBLE: the shortest digits that read
// back the same, with ".0" on integral values, exponent form from 1e16 (as
// Python's repr), inf, -inf and nan.
func FormatDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	if a := math.Abs(f); a != 0 && (a >= 1e16 || a < 1e-4) {
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsRune(s, '.') {
		s += ".0"
	}
	return s
}

// FormatTimestamp is DuckDB's text of a TIMESTAMP: the fraction of the
// second without trailing zeros, none when whole.
func FormatTimestamp(t time.Time) string {
	t = t.UTC()
	s := t.Format("2006-01-02 15:04:05")
	if us := t.Nanosecond() / 1000; us != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%06d", us), "0")
	}
	return s
}

// parseTimestamp reads text as DuckDB's TIMESTAMP cast does:
// YYYY-MM-DD, then optionally a space or T and HH:MM[:SS[.fraction]], then
// optionally Z or +00[:00]. ok is false for anything else.
func parseTimestamp(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, suffix := range []string{"Z", "+00:00", "+00", " UTC"} {
		s = strings.TrimSuffix(s, suffix)
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// castStringToTimestamp casts VARCHAR to TIMESTAMP (microseconds); a text
// that is not a timestamp is an error naming it.
func castStringToTimestamp(mem memory.Allocator, a arrow.Array, to arrow.DataType) (arrow.Array, error) {
	strs := a.(*array.String)
	b := array.NewTimestampBuilder(mem, to.(*arrow.TimestampType))
	defer b.Release()
	arrowx.Reserve(b, a.Len())
	unit := to.(*arrow.TimestampType).Unit
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		t, ok := parseTimestamp(strs.Value(i))
		if !ok {
			return nil, fmt.Errorf("%w: %q is not a timestamp (want YYYY-MM-DD[ HH:MM:SS[.ffffff]])", ErrConversion, strs.Value(i))
		}
		v, err := arrow.TimestampFromTime(t, unit)
		if err != nil {
			return nil, err
		}
		b.UnsafeAppend(v)
	}
	return b.NewArray(), nil
}
