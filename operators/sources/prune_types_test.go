package sources

import (
	"fmt"
	"math/big"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"

	"github.com/tierflow/tierflow/operators/sources/sourcestest"
)

// pruneCase is one Parquet logical type: how row i's value is built, and
// the same value as a bound's constant. unsound marks the types whose
// statistics this project's writer (arrow-go v17) gets wrong: an unsigned
// column's min is written as all ones. Those statistics contradict
// themselves (min > max), so pruning must keep every group, never drop one
// whose rows pass.
type pruneCase struct {
	name    string
	typ     arrow.DataType
	put     func(b array.Builder, i int)
	bound   func(i int) any
	unsound bool
}

const (
	pruneGroups = 5
	pruneRows   = 40 // per group
)

// signed spreads the rows over negative and positive values.
func signed(i int) int64 { return int64(i - pruneGroups*pruneRows/2) }

func pruneCases() []pruneCase {
	day0 := time.Date(1995, 6, 17, 0, 0, 0, 0, time.UTC)
	dec := func(p, s int32) pruneCase {
		t := &arrow.Decimal128Type{Precision: p, Scale: s}
		// value i is signed(i) + 0.25, scaled: 100 rows of -99.75 ...
		unscaled := func(i int) *big.Int {
			v := new(big.Int).Mul(big.NewInt(signed(i)*4+1), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil))
			return v.Quo(v, big.NewInt(4))
		}
		return pruneCase{name: fmt.Sprintf("decimal(%d,%d)", p, s), typ: t,
			put: func(b array.Builder, i int) {
				b.(*array.Decimal128Builder).Append(decimal128.FromBigInt(unscaled(i)))
			},
			bound: func(i int) any {
				return new(big.Rat).SetFrac(unscaled(i), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil))
			}}
	}
	ts := func(u arrow.TimeUnit) pruneCase {
		t := &arrow.TimestampType{Unit: u}
		at := func(i int) time.Time { return day0.Add(time.Duration(signed(i)) * 90 * time.Minute) }
		return pruneCase{name: "timestamp(" + u.String() + ")", typ: t,
			put: func(b array.Builder, i int) {
				v, _ := arrow.TimestampFromTime(at(i), u)
				b.(*array.TimestampBuilder).Append(v)
			},
			bound: func(i int) any { return at(i) }}
	}
	return []pruneCase{
		{"int8", arrow.PrimitiveTypes.Int8, func(b array.Builder, i int) { b.(*array.Int8Builder).Append(int8(i - 100)) },
			func(i int) any { return int64(i - 100) }, false},
		{"int16", arrow.PrimitiveTypes.Int16, func(b array.Builder, i int) { b.(*array.Int16Builder).Append(int16(signed(i) * 100)) },
			func(i int) any { return signed(i) * 100 }, false},
		{"int32", arrow.PrimitiveTypes.Int32, func(b array.Builder, i int) { b.(*array.Int32Builder).Append(int32(signed(i) * 1000)) },
			func(i int) any { return signed(i) * 1000 }, false},
		{"int64", arrow.PrimitiveTypes.Int64, func(b array.Builder, i int) { b.(*array.Int64Builder).Append(signed(i) << 40) },
			func(i int) any { return signed(i) << 40 }, false},
		// Unsigned values above the signed range: stored in INT32/INT64
		// they read negative unless decoded as unsigned.
		{"uint8", arrow.PrimitiveTypes.Uint8, func(b array.Builder, i int) { b.(*array.Uint8Builder).Append(uint8(i)) },
			func(i int) any { return int64(i) }, true},
		{"uint16", arrow.PrimitiveTypes.Uint16, func(b array.Builder, i int) { b.(*array.Uint16Builder).Append(uint16(i * 300)) },
			func(i int) any { return int64(i * 300) }, true},
		{"uint32", arrow.PrimitiveTypes.Uint32, func(b array.Builder, i int) { b.(*array.Uint32Builder).Append(uint32(1<<31 + i*1000)) },
			func(i int) any { return int64(1<<31 + i*1000) }, true},
		{"uint64", arrow.PrimitiveTypes.Uint64, func(b array.Builder, i int) { b.(*array.Uint64Builder).Append(uint64(1<<62 + i)) },
			func(i int) any { return int64(1<<62 + i) }, true},
		{"float32", arrow.PrimitiveTypes.Float32, func(b array.Builder, i int) { b.(*array.Float32Builder).Append(float32(signed(i)) + 0.5) },
			func(i int) any { return float64(signed(i)) + 0.5 }, false},
		{"float64", arrow.PrimitiveTypes.Float64, func(b array.Builder, i int) { b.(*array.Float64Builder).Append(float64(signed(i)) / 8) },
			func(i int) any { return float64(signed(i)) / 8 }, false},
		dec(9, 2),  // INT32
		dec(15, 2), // INT64 (TPC-H's money)
		dec(30, 4), // FIXED_LEN_BYTE_ARRAY
		{"date", arrow.FixedWidthTypes.Date32,
			func(b array.Builder, i int) {
				b.(*array.Date32Builder).Append(arrow.Date32FromTime(day0.AddDate(0, 0, int(signed(i)))))
			},
			func(i int) any { return day0.AddDate(0, 0, int(signed(i))) }, false},
		ts(arrow.Millisecond), ts(arrow.Microsecond), ts(arrow.Nanosecond),
		{"string", arrow.BinaryTypes.String, func(b array.Builder, i int) { b.(*array.StringBuilder).Append(fmt.Sprintf("k%04d", i)) },
			func(i int) any { return fmt.Sprintf("k%04d", i) }, false},
	}
}

// writePruneFile writes the case's rows, ascending, as pruneGroups row
// groups of pruneRows.
func writePruneFile(t *testing.T, c pruneCase) string {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: c.typ, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := 0; i < pruneGroups*pruneRows; i++ {
		c.put(b.Field(0), i)
	}
	rec := b.NewRecord()
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "t.parquet")
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(pruneRows), parquet.WithStats(true),
		parquet.WithStoreDecimalAsInteger(true), parquet.WithDictionaryDefault(false))
	sourcestest.WriteParquet(t, path, rec, props, pqarrow.NewArrowWriterProperties())
	return path
}

// TestPruningReadsEachLogicalType: for every Parquet logical type, over
// several row groups, each bound keeps exactly the row groups that hold a
// row passing it. The statistics are decoded by the logical type: a DECIMAL
// stored as an integer is read at its scale, a DATE as days, a TIMESTAMP in
// its unit, an unsigned integer as unsigned.
func TestPruningReadsEachLogicalType(t *testing.T) {
	n := pruneGroups * pruneRows
	probes := []int{0, 1, pruneRows - 1, pruneRows, 2*pruneRows + 7, 3 * pruneRows, n - 1}
	for _, c := range pruneCases() {
		t.Run(c.name, func(t *testing.T) {
			path := writePruneFile(t, c)
			pf, err := file.OpenParquetFile(path, false)
			if err != nil {
				t.Fatal(err)
			}
			defer pf.Close()
			fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			if got := fr.Manifest.Fields[0].Field.Type; !arrow.TypeEqual(got, c.typ) {
				t.Fatalf("the file reads back as %s", got)
			}
			for _, k := range probes {
				for _, op := range []string{"<", "<=", ">", ">=", "="} {
					keep := keepRowGroups(pf.MetaData(), fr.Manifest, []Bound{{Column: "v", Op: op, Value: c.bound(k)}})
					want := map[int]bool{}
					for i := 0; i < n; i++ {
						if pass(op, i, k) {
							want[i/pruneRows] = true
						}
					}
					got := map[int]bool{}
					if keep == nil {
						for g := 0; g < pruneGroups; g++ {
							got[g] = true
						}
					}
					for _, g := range keep {
						got[g] = true
					}
					if len(want) == 0 {
						want[0] = true // nothing passes: the first group is read for its schema
					}
					if c.unsound {
						for g := range want {
							if !got[g] {
								t.Errorf("v %s value of row %d: row groups %v dropped group %d, which has passing rows", op, k, sortedKeys(got), g)
							}
						}
						continue
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("v %s value of row %d: row groups %v, want %v", op, k, sortedKeys(got), sortedKeys(want))
					}
				}
			}
		})
	}
}

// pass compares rows by index: every case's values ascend with the row.
func pass(op string, i, k int) bool {
	switch op {
	case "<":
		return i < k
	case "<=":
		return i <= k
	case ">":
		return i > k
	case ">=":
		return i >= k
	}
	return i == k
}

func sortedKeys(m map[int]bool) []int {
	var out []int
	for g := 0; g < pruneGroups; g++ {
		if m[g] {
			out = append(out, g)
		}
	}
	return out
}
