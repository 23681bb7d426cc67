package sources

import (
	"cmp"
	"math"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/parquet/metadata"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// A Bound is one conjunct of the filter over a scan, Column Op Value, that a
// row group's statistics can refute: Op is <, <=, >, >= or =; Value is an
// int64, a float64, a string or a time.Time (for a TIMESTAMP column, in
// the file's unit).
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
func refuted(rg *metadata.RowGroupMetaData, leaf map[string]*pqarrow.SchemaField, bounds []Bound) bool {
	for _, b := range bounds {
		f, ok := leaf[b.Column]
		if !ok {
			continue
		}
		if t, ok := b.Value.(time.Time); ok {
			// A timestamp compares in the column's own unit.
			ts, isTS := f.Field.Type.(*arrow.TimestampType)
			if !isTS {
				continue
			}
			v, err := arrow.TimestampFromTime(t, ts.Unit)
			if err != nil {
				continue
			}
			b.Value = int64(v)
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
		var c1, c2 int // compare(min, value), compare(max, value)
		switch s := st.(type) {
		case *metadata.Int32Statistics:
			if c1, c2, ok = compareInts(int64(s.Min()), int64(s.Max()), b.Value); !ok {
				continue
			}
		case *metadata.Int64Statistics:
			if c1, c2, ok = compareInts(s.Min(), s.Max(), b.Value); !ok {
				continue
			}
		case *metadata.Float64Statistics:
			v, ok := asFloat(b.Value)
			if !ok || math.IsNaN(s.Min()) || math.IsNaN(s.Max()) {
				continue
			}
			c1, c2 = cmp.Compare(s.Min(), v), cmp.Compare(s.Max(), v)
		case *metadata.ByteArrayStatistics:
			v, ok := b.Value.(string)
			if !ok {
				continue
			}
			c1, c2 = cmp.Compare(string(s.Min()), v), cmp.Compare(string(s.Max()), v)
		default:
			continue
		}
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

// compareInts compares an integer column's min and max with a value, an
// integer or (the column widened to DOUBLE) a float.
func compareInts(lo, hi int64, v any) (int, int, bool) {
	switch x := v.(type) {
	case int64:
		return cmp.Compare(lo, x), cmp.Compare(hi, x), true
	case float64:
		if math.IsNaN(x) {
			return 0, 0, false
		}
		return cmp.Compare(float64(lo), x), cmp.Compare(float64(hi), x), true
	}
	return 0, 0, false
}

func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	}
	return 0, false
}
