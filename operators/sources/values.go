package sources

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/planner/expr"
)

var timeLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04", "2006-01-02"}

// ParseTime reads a timestamp as RFC 3339, "YYYY-MM-DD hh:mm:ss[.ffffff]" or a
// date (UTC unless the text carries a zone). The common forms are read from
// the text in place (parseTimeText), the rest by time.Parse in the layouts'
// order.
func ParseTime(s string) (time.Time, error) {
	if secs, ns, ok := parseTimeText(s); ok && timeText {
		return time.Unix(secs, int64(ns)).UTC(), nil
	}
	return parseTimeLayouts(s)
}

// timeText: ParseTime reads the common forms with parseTimeText (false
// only in BenchmarkScanStreamCSV's turns of the time.Parse path).
var timeText = true

// parseTimeLayouts is ParseTime by time.Parse alone: the first of
// timeLayouts that reads s.
func parseTimeLayouts(s string) (time.Time, error) {
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("not a timestamp: %q", s)
}

// convert turns a text or JSON value into the Go value for type t (nil: NULL).
func convert(v any, t arrow.DataType) (any, error) {
	if v == nil {
		return nil, nil
	}
	if s, ok := v.(string); ok && s == "" && t.ID() != arrow.STRING {
		return nil, nil
	}
	switch t.ID() {
	case arrow.STRING:
		switch x := v.(type) {
		case string:
			if !utf8.ValidString(x) {
				return nil, ErrInvalidUTF8
			}
			return x, nil
		case json.Number:
			return x.String(), nil
		}
		return fmt.Sprint(v), nil
	case arrow.BOOL:
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			return strconv.ParseBool(strings.ToLower(x))
		}
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		var s string
		switch x := v.(type) {
		case string:
			s = strings.TrimSpace(x)
		case json.Number:
			s = x.String()
		default:
			return nil, fmt.Errorf("want an integer, got %v", v)
		}
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("want an integer, got %q", s)
		}
		if bits := t.(arrow.FixedWidthDataType).BitWidth(); bits < 64 && (i >= 1<<(bits-1) || i < -(1<<(bits-1))) {
			return nil, fmt.Errorf("%d does not fit %s", i, t)
		}
		return i, nil
	case arrow.FLOAT32, arrow.FLOAT64:
		var s string
		switch x := v.(type) {
		case string:
			s = strings.TrimSpace(x)
		case json.Number:
			s = x.String()
		default:
			return nil, fmt.Errorf("want a number, got %v", v)
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("want a number, got %q", s)
		}
		return f, nil
	case arrow.DECIMAL128:
		var s string
		switch x := v.(type) {
		case string:
			s = strings.TrimSpace(x)
		case json.Number:
			s = x.String()
		default:
			return nil, fmt.Errorf("want a number, got %v", v)
		}
		r, ok := new(big.Rat).SetString(s)
		if !ok || strings.Contains(s, "/") {
			return nil, fmt.Errorf("want a number, got %q", s)
		}
		d := t.(*arrow.Decimal128Type)
		n, ok := expr.DecimalFromRat(r, d.Scale)
		if !ok || !expr.FitsDecimal(n.BigInt(), d.Precision) {
			return nil, fmt.Errorf("%s does not fit %s", s, expr.TypeName(t))
		}
		return n, nil
	case arrow.TIMESTAMP, arrow.DATE32, arrow.DATE64:
		switch x := v.(type) {
		case string:
			return ParseTime(strings.TrimSpace(x))
		case json.Number:
			// Numbers are seconds since the epoch (with fraction).
			f, err := x.Float64()
			if err != nil {
				return nil, err
			}
			sec, frac := math.Modf(f)
			return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
		}
	}
	return nil, fmt.Errorf("cannot read %v as %s", v, t)
}

// appendTo appends a converted value to a builder of the field's type.
func appendTo(b array.Builder, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.Int8Builder:
		b.Append(int8(v.(int64)))
	case *array.Int16Builder:
		b.Append(int16(v.(int64)))
	case *array.Int32Builder:
		b.Append(int32(v.(int64)))
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Uint8Builder:
		b.Append(uint8(v.(int64)))
	case *array.Uint16Builder:
		b.Append(uint16(v.(int64)))
	case *array.Uint32Builder:
		b.Append(uint32(v.(int64)))
	case *array.Uint64Builder:
		b.Append(uint64(v.(int64)))
	case *array.Float32Builder:
		b.Append(float32(v.(float64)))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.TimestampBuilder:
		unit := b.Type().(*arrow.TimestampType).Unit
		ts, _ := arrow.TimestampFromTime(v.(time.Time), unit)
		b.Append(ts)
	case *array.Date32Builder:
		b.Append(arrow.Date32FromTime(v.(time.Time)))
	case *array.Date64Builder:
		b.Append(arrow.Date64FromTime(v.(time.Time)))
	case *array.Decimal128Builder:
		b.Append(v.(decimal128.Num))
	default:
		_ = b.AppendValueFromString(fmt.Sprint(v))
	}
}

// batcher accumulates converted rows into a record of at most size rows.
type batcher struct {
	schema *arrow.Schema
	bs     []array.Builder
	n      int
}

func newBatcher(mem memory.Allocator, schema *arrow.Schema) *batcher {
	b := &batcher{schema: schema}
	for _, f := range schema.Fields() {
		b.bs = append(b.bs, array.NewBuilder(mem, f.Type))
	}
	return b
}

func (b *batcher) add(row []any) {
	for i, v := range row {
		appendTo(b.bs[i], v)
	}
	b.n++
}

func (b *batcher) finish() arrow.Record {
	defer func() {
		for _, x := range b.bs {
			x.Release()
		}
	}()
	if b.n == 0 {
		return nil
	}
	cols := make([]arrow.Array, len(b.bs))
	for i, x := range b.bs {
		cols[i] = x.NewArray()
	}
	rec := array.NewRecord(b.schema, cols, int64(b.n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// inferType picks the narrowest of BIGINT, DOUBLE, BOOLEAN, TIMESTAMP, VARCHAR
// that reads every sample value.
func inferType(samples []any) arrow.DataType {
	for _, t := range []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64, arrow.FixedWidthTypes.Boolean, arrow.FixedWidthTypes.Timestamp_us} {
		ok, seen := true, false
		for _, s := range samples {
			if s == nil || s == "" {
				continue
			}
			seen = true
			if _, isBool := s.(bool); isBool && t.ID() != arrow.BOOL {
				ok = false
				break
			}
			if _, err := convert(s, t); err != nil {
				ok = false
				break
			}
		}
		if ok && seen {
			return t
		}
	}
	return arrow.BinaryTypes.String
}

func (b *batcher) discard() {
	if r := b.finish(); r != nil {
		r.Release()
	}
}
