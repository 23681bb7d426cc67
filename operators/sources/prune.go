package sources

import (
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/parquet/metadata"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// A Bound is one conjunct of the filter over a scan, Column Op Value, that a
// row group's statistics can refute: Op is <, <=, >, >= or =; Value is an
// int64, a float64, a *big.Rat (an exact DECIMAL constant), a string or a
// time.Time (for a DATE or TIMESTAMP column).
// The filter still runs on the rows read: a bound only skips row groups in
// which no row can pass it.
type Bound struct {
	Column string
	Op     string
	Value  any
}

// keepRowGroups lists the row groups that some row of may satisfy every
// bound (nil: all of them, nothing to prune).
func keepRowGroups(md *metadata.FileMetaData, m *pqarrow.SchemaManifest, bounds []Bound) []int {
	if len(bounds) == 0 || md == nil || m == nil {
		return nil
	}
	leaf := map[string]*pqarrow.SchemaField{}
	for i := range m.Fields {
		if f := &m.Fields[i]; f.IsLeaf() {
			leaf[f.Field.Name] = f
		}
	}
	n := len(md.RowGroups)
	keep := []int{}
	for rg := 0; rg < n; rg++ {
		if !refuted(md.RowGroup(rg), leaf, bounds) {
			keep = append(keep, rg)
		}
	}
	switch len(keep) {
	case n:
		return nil
	case 0:
		// Every group refuted: read the first, whose rows the filter
		// drops (a reader needs a row group to have a schema).
		return []int{0}
	}
	return keep
}

// refuted: some bound holds for no row of the row group, by its min and max.
// The statistics are read by the column's logical type (its Arrow type), not
// by how they are stored: a DECIMAL(15,2) stored as INT64 keeps 1.00 as 100,
// a DATE is a count of days, a UINT32 is stored in an INT32, and each is
// compared with the constant as the value it stands for.
func refuted(rg *metadata.RowGroupMetaData, leaf map[string]*pqarrow.SchemaField, bounds []Bound) bool {
	for _, b := range bounds {
		f, ok := leaf[b.Column]
		if !ok {
			continue
		}
		cc, err := rg.ColumnChunk(f.ColIndex)
		if err != nil {
			continue
		}
		if set, err := cc.StatsSet(); err != nil || !set {
			continue
		}
		st, err := cc.Statistics()
		if err != nil || st == nil || !st.HasMinMax() {
			continue
		}
		lo, hi, ok := statRange(f.Field.Type, st)
		if !ok {
			continue
		}
		v, ok := boundValue(f.Field.Type, b.Value)
		if !ok {
			continue
		}
		c1, c2 := compareStat(lo, v), compareStat(hi, v) // compare(min, value), compare(max, value)
		switch b.Op {
		case "<":
			if c1 >= 0 { // min >= v: no row < v
				return true
			}
		case "<=":
			if c1 > 0 {
				return true
			}
		case ">":
			if c2 <= 0 {
				return true
			}
		case ">=":
			if c2 < 0 {
				return true
			}
		case "=":
			if c1 > 0 || c2 < 0 {
				return true
			}
		}
	}
	return false
}

// A statistic and a bound meet as exact numbers (*big.Rat: integers,
// floats, decimals, and dates and timestamps as seconds since 1970) or as
// strings.
func compareStat(a, b any) int {
	switch x := a.(type) {
	case *big.Rat:
		return x.Cmp(b.(*big.Rat))
	case string:
		return strings.Compare(x, b.(string))
	}
	return 0
}

// statRange decodes a row group's min and max of a column of Arrow type t.
// ok is false where they bound nothing this code can read (NaN or infinite
// floats, INT96 times, booleans, nested types).
func statRange(t arrow.DataType, st metadata.TypedStatistics) (lo, hi any, ok bool) {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
		s, ok := st.(*metadata.ByteArrayStatistics)
		if !ok {
			return nil, nil, false
		}
		return string(s.Min()), string(s.Max()), true
	}
	var mn, mx *big.Rat
	switch s := st.(type) {
	case *metadata.Int32Statistics:
		if isUnsigned(t) {
			mn, mx = ratU(uint64(uint32(s.Min()))), ratU(uint64(uint32(s.Max())))
		} else {
			mn, mx = big.NewRat(int64(s.Min()), 1), big.NewRat(int64(s.Max()), 1)
		}
	case *metadata.Int64Statistics:
		if isUnsigned(t) {
			mn, mx = ratU(uint64(s.Min())), ratU(uint64(s.Max()))
		} else {
			mn, mx = big.NewRat(s.Min(), 1), big.NewRat(s.Max(), 1)
		}
	case *metadata.Float32Statistics:
		mn, mx = ratF(float64(s.Min())), ratF(float64(s.Max()))
	case *metadata.Float64Statistics:
		mn, mx = ratF(s.Min()), ratF(s.Max())
	case *metadata.FixedLenByteArrayStatistics:
		if !isDecimal(t) {
			return nil, nil, false
		}
		mn, mx = ratBigEndian(s.Min()), ratBigEndian(s.Max())
	case *metadata.ByteArrayStatistics:
		if !isDecimal(t) {
			return nil, nil, false
		}
		mn, mx = ratBigEndian(s.Min()), ratBigEndian(s.Max())
	default:
		return nil, nil, false
	}
	if mn == nil || mx == nil || mn.Cmp(mx) > 0 || !inRange(t, mn) || !inRange(t, mx) {
		// Statistics that contradict themselves or their type are a
		// writer's bug (arrow-go v17 writes an unsigned column's min as
		// all ones): they bound nothing.
		return nil, nil, false
	}
	// The stored integers stand for their logical values.
	scale := new(big.Rat)
	switch tt := t.(type) {
	case *arrow.Decimal128Type:
		scale.SetFrac(big.NewInt(1), pow10(tt.Scale))
	case *arrow.Decimal256Type:
		scale.SetFrac(big.NewInt(1), pow10(tt.Scale))
	case *arrow.Date32Type:
		scale.SetInt64(86400)
	case *arrow.Date64Type:
		scale.SetFrac64(1, 1000)
	case *arrow.TimestampType:
		scale.SetFrac64(1, unitsPerSecond(tt.Unit))
	default:
		if !isNumber(t) {
			return nil, nil, false
		}
		scale.SetInt64(1)
	}
	return mn.Mul(mn, scale), mx.Mul(mx, scale), true
}

// boundValue is a bound's constant in the domain its column's statistics
// decode to (statRange); ok is false when the two do not compare (a string
// against a number, a time against a number).
func boundValue(t arrow.DataType, v any) (any, bool) {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
		s, ok := v.(string)
		return s, ok
	case arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP:
		tm, ok := v.(time.Time)
		if !ok {
			return nil, false
		}
		r := big.NewRat(tm.Unix(), 1)
		return r.Add(r, big.NewRat(int64(tm.Nanosecond()), 1e9)), true
	}
	if !isNumber(t) {
		return nil, false
	}
	switch x := v.(type) {
	case int64:
		return big.NewRat(x, 1), true
	case float64:
		r := ratF(x)
		return r, r != nil
	case *big.Rat:
		return x, true
	}
	return nil, false
}

func isUnsigned(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

func isDecimal(t arrow.DataType) bool {
	return t.ID() == arrow.DECIMAL128 || t.ID() == arrow.DECIMAL256
}

func isNumber(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT32, arrow.FLOAT64, arrow.DECIMAL128, arrow.DECIMAL256:
		return true
	}
	return false
}

// inRange reports whether a stored integer fits its logical type (a UINT8
// stored in an INT32 is 0 to 255).
func inRange(t arrow.DataType, v *big.Rat) bool {
	var lo, hi int64
	switch t.ID() {
	case arrow.INT8:
		lo, hi = math.MinInt8, math.MaxInt8
	case arrow.INT16:
		lo, hi = math.MinInt16, math.MaxInt16
	case arrow.UINT8:
		lo, hi = 0, math.MaxUint8
	case arrow.UINT16:
		lo, hi = 0, math.MaxUint16
	case arrow.UINT32:
		lo, hi = 0, math.MaxUint32
	default:
		return true
	}
	return v.Cmp(big.NewRat(lo, 1)) >= 0 && v.Cmp(big.NewRat(hi, 1)) <= 0
}

func ratU(u uint64) *big.Rat { return new(big.Rat).SetInt(new(big.Int).SetUint64(u)) }

// ratF is x exactly; nil for NaN and infinities, which bound nothing.
func ratF(x float64) *big.Rat {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return new(big.Rat).SetFloat64(x)
}

// ratBigEndian reads a DECIMAL stored as bytes: a big-endian two's
// complement integer.
func ratBigEndian(b []byte) *big.Rat {
	if len(b) == 0 {
		return nil
	}
	v := new(big.Int).SetBytes(b)
	if b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return new(big.Rat).SetInt(v)
}

func pow10(n int32) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }
