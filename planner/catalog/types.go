package catalog

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/planner/expr"
)

// ShapeKey is the field metadata key that carries a tensor column's shape
// ("3,224,224"), since fixed_size_list only knows the flat length.
const ShapeKey = "tierflow.shape"

// EncodingKey marks a tensor column whose values travel encoded: "uint8",
// a value in [0, 1] as one byte (planner/logical.Adapt); the model call
// that reads it decodes.
const EncodingKey = "tierflow.encoding"

// SidesKey marks a tensor column of square images whose rows may each
// travel at a smaller side than its shape's (a variable-length list; the
// value lists the sides, largest first): a latency-bound query's
// source-side adaptation picks one per batch from its link
// (planner/logical.Adapt's Sides), and the model call resizes each row
// to the shape.
const SidesKey = "tierflow.sides"

// ParseType turns a column type as written in a query or catalog into an arrow
// type. Tensors are fixed_size_list<float32> of the product of their dims.
func ParseType(s string) (arrow.DataType, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	switch t {
	case "BOOLEAN", "BOOL":
		return arrow.FixedWidthTypes.Boolean, nil
	case "INT", "INTEGER":
		return arrow.PrimitiveTypes.Int32, nil
	case "BIGINT":
		return arrow.PrimitiveTypes.Int64, nil
	case "FLOAT", "REAL":
		return arrow.PrimitiveTypes.Float32, nil
	case "DOUBLE":
		return arrow.PrimitiveTypes.Float64, nil
	case "VARCHAR", "STRING", "TEXT":
		return arrow.BinaryTypes.String, nil
	case "BLOB", "BYTES":
		return arrow.BinaryTypes.Binary, nil
	case "TIMESTAMP":
		return arrow.FixedWidthTypes.Timestamp_us, nil
	case "DATE":
		return arrow.FixedWidthTypes.Date32, nil
	}
	if strings.HasPrefix(t, "DECIMAL") || strings.HasPrefix(t, "NUMERIC") {
		return expr.TypeByName(t)
	}
	if rest, ok := strings.CutPrefix(t, "TENSOR"); ok {
		rest = strings.TrimSpace(rest)
		if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
			return nil, fmt.Errorf("bad tensor type %q: want TENSOR(FLOAT, d1, d2, ...)", s)
		}
		parts := strings.Split(rest[1:len(rest)-1], ",")
		if len(parts) < 2 {
			return nil, fmt.Errorf("bad tensor type %q: want TENSOR(FLOAT, d1, d2, ...)", s)
		}
		elem, err := ParseType(parts[0])
		if err != nil {
			return nil, err
		}
		n := 1
		for _, p := range parts[1:] {
			d, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("bad tensor dimension %q in %q", strings.TrimSpace(p), s)
			}
			n *= d
		}
		return arrow.FixedSizeListOf(int32(n), elem), nil
	}
	return nil, fmt.Errorf("unknown type %q (want BOOLEAN, INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p, s), VARCHAR, BLOB, TIMESTAMP, DATE or TENSOR(FLOAT, d...))", s)
}

// TensorShape returns the dims of a TENSOR(...) type string, or nil.
func TensorShape(s string) []int {
	t := strings.ToUpper(strings.TrimSpace(s))
	rest, ok := strings.CutPrefix(t, "TENSOR")
	if !ok {
		return nil
	}
	rest = strings.Trim(strings.TrimSpace(rest), "()")
	parts := strings.Split(rest, ",")
	var dims []int
	for _, p := range parts[1:] {
		d, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return nil
		}
		dims = append(dims, d)
	}
	return dims
}

// Field returns the arrow field of a column (tensor shape in metadata).
func (c Column) Field() (arrow.Field, error) {
	dt, err := ParseType(c.Type)
	if err != nil {
		return arrow.Field{}, err
	}
	f := arrow.Field{Name: c.Name, Type: dt, Nullable: true}
	if dims := TensorShape(c.Type); dims != nil {
		s := make([]string, len(dims))
		for i, d := range dims {
			s[i] = strconv.Itoa(d)
		}
		f.Metadata = arrow.NewMetadata([]string{ShapeKey}, []string{strings.Join(s, ",")})
	}
	return f, nil
}

// TypeName is the query language's spelling of an arrow field's type, for a
// schema read from a file (the inverse of ParseType; narrower integers read
// as INT, timestamps of every unit and zone, and dates, as TIMESTAMP). A type
// the engine has no column type for is an error naming it.
func TypeName(f arrow.Field) (string, error) {
	switch t := f.Type.(type) {
	case *arrow.BooleanType:
		return "BOOLEAN", nil
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Uint8Type, *arrow.Uint16Type:
		return "INT", nil
	case *arrow.Int64Type, *arrow.Uint32Type, *arrow.Uint64Type:
		return "BIGINT", nil
	case *arrow.Float32Type:
		return "FLOAT", nil
	case *arrow.Float64Type:
		return "DOUBLE", nil
	case *arrow.StringType, *arrow.LargeStringType:
		return "VARCHAR", nil
	case *arrow.BinaryType, *arrow.LargeBinaryType:
		return "BLOB", nil
	case *arrow.TimestampType:
		return "TIMESTAMP", nil
	case *arrow.Date32Type, *arrow.Date64Type:
		return "DATE", nil
	case *arrow.Decimal128Type:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale), nil
	case *arrow.Decimal256Type:
		// More than 38 digits: read as the nearest DOUBLEs.
		return "DOUBLE", nil
	case *arrow.FixedSizeListType:
		if t.Elem().ID() != arrow.FLOAT32 {
			break
		}
		dims := strconv.Itoa(int(t.Len()))
		if s, ok := f.Metadata.GetValue(ShapeKey); ok && s != "" {
			dims = strings.ReplaceAll(s, ",", ", ")
		}
		return "TENSOR(FLOAT, " + dims + ")", nil
	}
	return "", fmt.Errorf("column %q has type %s, which has no column type here (want BOOLEAN, INT, BIGINT, FLOAT, DOUBLE, DECIMAL, VARCHAR, BLOB, TIMESTAMP, DATE or a float tensor)", f.Name, f.Type)
}
