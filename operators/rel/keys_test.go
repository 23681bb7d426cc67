package rel

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// keyArray builds an array of type dt from small ints (nil: NULL).
func keyArray(t testing.TB, mem memory.Allocator, dt arrow.DataType, vals []any) arrow.Array {
	t.Helper()
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	for _, v := range vals {
		if v == nil {
			b.AppendNull()
			continue
		}
		x := v.(int)
		switch b := b.(type) {
		case *array.Int8Builder:
			b.Append(int8(x))
		case *array.Int16Builder:
			b.Append(int16(x))
		case *array.Int32Builder:
			b.Append(int32(x))
		case *array.Int64Builder:
			b.Append(int64(x) << 40)
		case *array.Uint8Builder:
			b.Append(uint8(x))
		case *array.Uint16Builder:
			b.Append(uint16(x))
		case *array.Uint32Builder:
			b.Append(uint32(x))
		case *array.Uint64Builder:
			b.Append(uint64(x) << 56)
		case *array.Date32Builder:
			b.Append(arrow.Date32(x))
		case *array.TimestampBuilder:
			b.Append(arrow.Timestamp(x))
		case *array.StringBuilder:
			b.Append(fmt.Sprintf("k%03d", x))
		case *array.Float64Builder:
			b.Append(float64(x) / 2)
		default:
			t.Fatalf("no builder for %s", dt)
		}
	}
	return b.NewArray()
}

// TestKeyTableIdsFollowValues: for one key of every fixed width, a string
// key and two keys together, rows get equal ids exactly when their keys are
// equal (NULL equal to NULL in a grouping), ids are dense in order of first
// appearance with the key values kept in that order, and find gives the same
// ids without adding, -1 for a key not in the table or a NULL.
func TestKeyTableIdsFollowValues(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	types := []arrow.DataType{
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
		arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64,
		arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Timestamp_us, arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64,
	}
	rng := rand.New(rand.NewSource(2))
	vals := make([]any, 3000)
	for i := range vals {
		if rng.Intn(20) == 0 {
			continue // NULL
		}
		vals[i] = rng.Intn(100)
	}
	probe := make([]any, 500)
	for i := range probe {
		if rng.Intn(20) > 0 {
			probe[i] = rng.Intn(130) // some absent
		}
	}
	for _, dt := range types {
		for _, two := range []bool{false, true} {
			name := dt.String()
			cols := []arrow.Array{keyArray(t, mem, dt, vals)}
			pcols := []arrow.Array{keyArray(t, mem, dt, probe)}
			colTypes := []arrow.DataType{dt}
			if two {
				name += "+int32"
				cols = append(cols, keyArray(t, mem, arrow.PrimitiveTypes.Int32, vals))
				pcols = append(pcols, keyArray(t, mem, arrow.PrimitiveTypes.Int32, probe))
				colTypes = append(colTypes, arrow.PrimitiveTypes.Int32)
			}
			kt := newKeyTable(mem, colTypes)
			ids := make([]uint32, len(vals))
			// Two calls: ids hold across batches.
			kt.lookupBatch(cols, 0, 1000, ids[:1000])
			kt.lookupBatch(cols, 1000, len(vals), ids[1000:])
			firstID := map[any]uint32{}
			next := uint32(0)
			for i, v := range vals {
				id, seen := firstID[v]
				if !seen {
					if ids[i] != next {
						t.Fatalf("%s: row %d (%v) is new with id %d, want %d", name, i, v, ids[i], next)
					}
					firstID[v] = next
					next++
				} else if ids[i] != id {
					t.Fatalf("%s: row %d (%v) has id %d, the key's id is %d", name, i, v, ids[i], id)
				}
			}
			if kt.n != next {
				t.Fatalf("%s: %d ids, want %d", name, kt.n, next)
			}
			keys := kt.finishKeys()
			for v, id := range firstID {
				want := "(null)"
				if v != nil {
					want = cols[0].ValueStr(indexOf(vals, v))
				}
				if got := keys[0].ValueStr(int(id)); got != want {
					t.Fatalf("%s: key of id %d is %s, want %s", name, id, got, want)
				}
			}
			found := make([]int32, len(probe))
			kt.find(pcols, 0, len(probe), found)
			for i, v := range probe {
				want := int32(-1)
				if id, ok := firstID[v]; ok && v != nil {
					want = int32(id)
				}
				if found[i] != want {
					t.Fatalf("%s: find of %v gave %d, want %d", name, v, found[i], want)
				}
			}
			releaseArrays(keys)
			releaseArrays(cols)
			releaseArrays(pcols)
			kt.release()
		}
	}
}

func indexOf(vals []any, v any) int {
	for i, x := range vals {
		if x == v {
			return i
		}
	}
	return -1
}

// BenchmarkKeyTable compares the typed tables (an INT32 key, a string key)
// with the byte-encoded tuple map they replace, on 64k rows over 20k keys.
func BenchmarkKeyTable(b *testing.B) {
	mem := memory.NewGoAllocator()
	rng := rand.New(rand.NewSource(1))
	vals := make([]any, 1<<16)
	for i := range vals {
		vals[i] = rng.Intn(20000)
	}
	for _, dt := range []arrow.DataType{arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String} {
		col := keyArray(b, mem, dt, vals)
		for _, encoded := range []bool{true, false} {
			name := dt.String() + "/typed"
			if encoded {
				name = dt.String() + "/encoded"
			}
			b.Run(name, func(b *testing.B) {
				ids := make([]uint32, len(vals))
				for i := 0; i < b.N; i++ {
					kt := newKeyTable(mem, []arrow.DataType{dt})
					if encoded {
						kt.ints, kt.strs, kt.enc = nil, nil, newLongStrings()
					}
					for r := 0; r < 4; r++ {
						kt.lookupBatch([]arrow.Array{col}, 0, len(vals), ids)
					}
					kt.release()
				}
			})
		}
		col.Release()
	}
}

// TestGroupKeyTableTuples: tuples of strings and integers grouped column by
// column (multiKeys) get the ids of their first appearance, keep their
// values in id order, and find gives the same ids, -1 for a tuple not in
// the table or one with a NULL; across batches, for two and three columns.
func TestGroupKeyTableTuples(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(3))
	gen := func(n, k int) [][]any {
		cols := make([][]any, 3)
		for c := range cols {
			cols[c] = make([]any, n)
			for i := range cols[c] {
				if rng.Intn(15) > 0 {
					cols[c][i] = rng.Intn(k)
				}
			}
		}
		return cols
	}
	vals, probe := gen(4000, 6), gen(600, 8)
	types := []arrow.DataType{arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64}
	for _, width := range []int{2, 3} {
		var cols, pcols []arrow.Array
		for c := range width {
			cols = append(cols, keyArray(t, mem, types[c], vals[c]))
			pcols = append(pcols, keyArray(t, mem, types[c], probe[c]))
		}
		kt := newGroupKeyTable(mem, types[:width])
		if kt.multi == nil {
			t.Fatalf("%d columns: not grouped column by column", width)
		}
		tuple := func(src [][]any, i int) string {
			var s string
			for c := range width {
				s += fmt.Sprint(src[c][i], "|")
			}
			return s
		}
		ids := make([]uint32, 4000)
		// Batches growing and shrinking: ids hold across them.
		kt.lookupBatch(cols, 0, 1500, ids[:1500])
		kt.lookupBatch(cols, 1500, 3500, ids[1500:3500])
		kt.lookupBatch(cols, 3500, 4000, ids[3500:])
		first := map[string]uint32{}
		row := map[uint32]int{}
		for i := range ids {
			k := tuple(vals, i)
			id, seen := first[k]
			if !seen {
				id = uint32(len(first))
				first[k], row[id] = id, i
			}
			if ids[i] != id {
				t.Fatalf("%d columns: row %d %s has id %d, want %d", width, i, k, ids[i], id)
			}
		}
		keys := kt.finishKeys()
		for id, i := range row {
			for c := range width {
				if got, want := keys[c].ValueStr(int(id)), cols[c].ValueStr(i); got != want {
					t.Fatalf("%d columns: key %d column %d is %s, want %s", width, id, c, got, want)
				}
			}
		}
		found := make([]int32, 600)
		kt.find(pcols, 0, 600, found)
		for i := range found {
			want := int32(-1)
			if id, ok := first[tuple(probe, i)]; ok && !strings.Contains(tuple(probe, i), "<nil>") {
				want = int32(id)
			}
			if found[i] != want {
				t.Fatalf("%d columns: find of %s gave %d, want %d", width, tuple(probe, i), found[i], want)
			}
		}
		releaseArrays(keys)
		releaseArrays(cols)
		releaseArrays(pcols)
		kt.release()
	}
}

// BenchmarkGroupKeyTuples compares two string keys grouped column by column
// with the byte-encoded tuple map (TPC-H Q1's GROUP BY l_returnflag,
// l_linestatus), on 64k rows over 6 tuples.
func BenchmarkGroupKeyTuples(b *testing.B) {
	mem := memory.NewGoAllocator()
	rng := rand.New(rand.NewSource(1))
	a, c := make([]any, 1<<16), make([]any, 1<<16)
	for i := range a {
		a[i], c[i] = rng.Intn(3), rng.Intn(2)
	}
	types := []arrow.DataType{arrow.BinaryTypes.String, arrow.BinaryTypes.String}
	cols := []arrow.Array{keyArray(b, mem, types[0], a), keyArray(b, mem, types[1], c)}
	defer releaseArrays(cols)
	for _, name := range []string{"encoded", "columns"} {
		b.Run(name, func(b *testing.B) {
			ids := make([]uint32, len(a))
			for i := 0; i < b.N; i++ {
				kt := newKeyTable(mem, types)
				if name == "columns" {
					kt = newGroupKeyTable(mem, types)
				}
				for r := 0; r < 4; r++ {
					kt.lookupBatch(cols, 0, len(a), ids)
				}
				kt.release()
			}
		})
	}
}

// BenchmarkShortStringKeys compares strings of at most 7 bytes probed
// packed into an int64 (strTable) with the Go map of strings they had, for
// GROUP BY l_shipmode (7 modes) and a key of 20k values.
func BenchmarkShortStringKeys(b *testing.B) {
	mem := memory.NewGoAllocator()
	rng := rand.New(rand.NewSource(1))
	modes := []string{"AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"}
	for _, distinct := range []int{7, 20000} {
		sb := array.NewStringBuilder(mem)
		for range 1 << 16 {
			if distinct == 7 {
				sb.Append(modes[rng.Intn(7)])
			} else {
				sb.Append(fmt.Sprintf("k%05d", rng.Intn(distinct)))
			}
		}
		col := sb.NewArray()
		sb.Release()
		for _, name := range []string{"map", "packed"} {
			b.Run(fmt.Sprintf("%d/%s", distinct, name), func(b *testing.B) {
				ids := make([]uint32, col.Len())
				for i := 0; i < b.N; i++ {
					kt := newKeyTable(mem, []arrow.DataType{arrow.BinaryTypes.String})
					kt.strs.noPack = name == "map"
					for r := 0; r < 4; r++ {
						kt.lookupBatch([]arrow.Array{col}, 0, col.Len(), ids)
					}
					kt.release()
				}
			})
		}
		col.Release()
	}
}

// strTable tells apart strings that differ only in length or in a byte
// past the seventh, and finds short and long ones alike.
func TestStrTableShortAndLong(t *testing.T) {
	keys := []string{"", "a", "a\x00", "\x00", "abcdefg", "abcdefgh", "abcdefgi", "AIR", "REG AIR", "ünï", "a longer key than seven bytes"}
	st := newStrTable()
	for i, k := range keys {
		if _, ok := st.get(k); ok {
			t.Fatalf("%q found before it was put", k)
		}
		st.put(k, uint32(i))
	}
	for i, k := range keys {
		if id, ok := st.get(k); !ok || id != uint32(i) {
			t.Fatalf("%q: id %d %v, want %d", k, id, ok, i)
		}
	}
	if st.short.n != 8 || st.long.n != 3 {
		t.Fatalf("%d packed, %d in the map", st.short.n, st.long.n)
	}
}
