package expr

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
)

// The SQL types tierflow gives to literals and computed values. Sources may carry
// narrower types (int32, float32); calls coerce them to these.
var (
	Bool      arrow.DataType = arrow.FixedWidthTypes.Boolean
	Int64     arrow.DataType = arrow.PrimitiveTypes.Int64
	Float64   arrow.DataType = arrow.PrimitiveTypes.Float64
	String    arrow.DataType = arrow.BinaryTypes.String
	Timestamp arrow.DataType = arrow.FixedWidthTypes.Timestamp_us
	Interval  arrow.DataType = arrow.FixedWidthTypes.Duration_us
	// Calendar is an interval of months, days and nanoseconds (INTERVAL '3'
	// MONTH): its length in time depends on the date it is added to.
	Calendar arrow.DataType = arrow.FixedWidthTypes.MonthDayNanoInterval
	Date     arrow.DataType = arrow.FixedWidthTypes.Date32
	Null     arrow.DataType = arrow.Null
	// Blob is bytes with no text encoding: an encoded image (PNG, JPEG), a
	// crop of one.
	Blob arrow.DataType = arrow.BinaryTypes.Binary
)

// ErrUnknownType is returned for a SQL type name tierflow does not know.
var ErrUnknownType = errors.New("unknown type")

// TypeByName maps a SQL type name (case-insensitive) to its Arrow type.
func TypeByName(name string) (arrow.DataType, error) {
	if t, ok, err := parseDecimalType(name); ok {
		return t, err
	}
	switch strings.ToUpper(strings.TrimSpace(name)) {
	case "BOOLEAN", "BOOL":
		return Bool, nil
	case "TINYINT", "INT8":
		return arrow.PrimitiveTypes.Int8, nil
	case "SMALLINT", "INT16":
		return arrow.PrimitiveTypes.Int16, nil
	case "INT", "INTEGER", "INT32":
		return arrow.PrimitiveTypes.Int32, nil
	case "BIGINT", "INT64", "LONG":
		return Int64, nil
	case "FLOAT", "REAL", "FLOAT32":
		return arrow.PrimitiveTypes.Float32, nil
	case "DOUBLE", "FLOAT64", "DOUBLE PRECISION":
		return Float64, nil
	case "VARCHAR", "STRING", "TEXT", "CHAR":
		return String, nil
	case "TIMESTAMP":
		return Timestamp, nil
	case "DATE":
		return Date, nil
	case "INTERVAL":
		return Interval, nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownType, name)
}

// TypeName is the SQL spelling of an Arrow type, for messages and SHOW output.
func TypeName(t arrow.DataType) string {
	if t == nil {
		return "?"
	}
	switch t.ID() {
	case arrow.BOOL:
		return "BOOLEAN"
	case arrow.INT8:
		return "TINYINT"
	case arrow.INT16:
		return "SMALLINT"
	case arrow.INT32:
		return "INT"
	case arrow.INT64:
		return "BIGINT"
	case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return strings.ToUpper(t.Name())
	case arrow.FLOAT32:
		return "FLOAT"
	case arrow.FLOAT64:
		return "DOUBLE"
	case arrow.STRING, arrow.LARGE_STRING:
		return "VARCHAR"
	case arrow.BINARY, arrow.LARGE_BINARY:
		return "BLOB"
	case arrow.TIMESTAMP:
		return "TIMESTAMP"
	case arrow.DATE32, arrow.DATE64:
		return "DATE"
	case arrow.DURATION, arrow.INTERVAL_MONTH_DAY_NANO:
		return "INTERVAL"
	case arrow.DECIMAL128:
		return decimalTypeName(t.(*arrow.Decimal128Type))
	case arrow.NULL:
		return "NULL"
	}
	return strings.ToUpper(t.String())
}

// IsInteger reports whether t is a signed or unsigned integer type.
func IsInteger(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

// IsFloat reports whether t is a floating-point type.
func IsFloat(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
		return true
	}
	return false
}

// IsNumeric reports whether t is an integer, floating-point or DECIMAL type.
func IsNumeric(t arrow.DataType) bool { return IsInteger(t) || IsFloat(t) || IsDecimal(t) }

// IsString reports whether t is a UTF-8 string type.
func IsString(t arrow.DataType) bool {
	return t.ID() == arrow.STRING || t.ID() == arrow.LARGE_STRING
}

// IsBlob reports whether t is a bytes type (BLOB).
func IsBlob(t arrow.DataType) bool {
	return t.ID() == arrow.BINARY || t.ID() == arrow.LARGE_BINARY
}

// IsTemporal reports whether t is a timestamp or date.
func IsTemporal(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.TIMESTAMP, arrow.DATE32, arrow.DATE64:
		return true
	}
	return false
}

// IsNull reports whether t is the type of the bare NULL literal.
func IsNullType(t arrow.DataType) bool { return t != nil && t.ID() == arrow.NULL }

// CommonType is the type two operands are coerced to before they are compared or
// combined: integers widen to BIGINT, anything with a float to DOUBLE, a
// DECIMAL with an integer or a DECIMAL to the DECIMAL that holds both (the
// larger scale, the more integer digits), timestamps and dates to TIMESTAMP;
// NULL adopts the other side. ok is false when the two have no common type.
func CommonType(a, b arrow.DataType) (t arrow.DataType, ok bool) {
	switch {
	case IsNullType(a) && IsNullType(b):
		return Null, true
	case IsNullType(a):
		return Canonical(b), true
	case IsNullType(b):
		return Canonical(a), true
	case IsNumeric(a) && IsNumeric(b):
		if IsFloat(a) || IsFloat(b) {
			return Float64, true
		}
		if IsDecimal(a) || IsDecimal(b) {
			return commonDecimal(a, b), true
		}
		return Int64, true
	case IsString(a) && IsString(b):
		return String, true
	case a.ID() == arrow.BOOL && b.ID() == arrow.BOOL:
		return Bool, true
	case a.ID() == arrow.DATE32 && b.ID() == arrow.DATE32:
		// Two dates compare as days, without becoming timestamps.
		return Date, true
	case IsTemporal(a) && IsTemporal(b):
		return Timestamp, true
	case a.ID() == arrow.DURATION && b.ID() == arrow.DURATION:
		return Interval, true
	case a.ID() == arrow.INTERVAL_MONTH_DAY_NANO && b.ID() == arrow.INTERVAL_MONTH_DAY_NANO:
		return Calendar, true
	}
	return nil, false
}

// Canonical is the computation type of t: integers are BIGINT, floats DOUBLE,
// strings VARCHAR, timestamps and dates TIMESTAMP(us), durations INTERVAL(us);
// a DECIMAL stays itself.
func Canonical(t arrow.DataType) arrow.DataType {
	switch {
	case IsInteger(t):
		return Int64
	case IsFloat(t):
		return Float64
	case IsString(t):
		return String
	case IsTemporal(t):
		return Timestamp
	case t.ID() == arrow.DURATION:
		return Interval
	}
	return t
}
