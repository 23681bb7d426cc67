package rel

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/functions"
)

// TestGatherRefsFixedMatchesRows: the one-pass gather of fixed-width
// columns gives, for refs spread over several segments (sliced records,
// NULLs, nil segments), every row's value where it points; a string column
// takes the general path and gives the same.
func TestGatherRefsFixedMatchesRows(t *testing.T) {
	for _, withString := range []bool{false, true} {
		t.Run(fmt.Sprintf("string=%v", withString), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			fields := []arrow.Field{
				{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
				{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
				{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			}
			if withString {
				fields = append(fields, arrow.Field{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true})
			}
			schema := arrow.NewSchema(fields, nil)
			_, fixed := fixedWidths(schema)
			if fixed == withString {
				t.Fatalf("fixedWidths says %v for %v", fixed, schema)
			}
			rng := rand.New(rand.NewSource(7))
			var segs []*joinSeg
			for s := 0; s < 5; s++ {
				b := array.NewRecordBuilder(mem, schema)
				for r := 0; r < 40; r++ {
					v := int64(s*1000 + r)
					if r%7 == 3 {
						b.Field(0).AppendNull()
					} else {
						b.Field(0).(*array.Int64Builder).Append(v)
					}
					b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(v * 10))
					b.Field(2).(*array.Int32Builder).Append(int32(v))
					if withString {
						b.Field(3).(*array.StringBuilder).Append(fmt.Sprint("s", v))
					}
				}
				full := b.NewRecord()
				b.Release()
				// A slice, so the columns have an offset.
				rec := full.NewSlice(5, 40)
				full.Release()
				segs = append(segs, &joinSeg{rec: rec})
			}
			defer func() {
				for _, s := range segs {
					s.rec.Release()
				}
			}()
			var refs []joinRef
			for k := 0; k < 300; k++ {
				if k%50 == 49 {
					refs = append(refs, joinRef{}) // NULL padding
					continue
				}
				s := segs[rng.Intn(len(segs))]
				refs = append(refs, joinRef{seg: s, i: int32(rng.Intn(int(s.rec.NumRows())))})
			}
			got, err := gatherRefs(functions.NewCtx(mem), schema, refs)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Release()
			if got.NumRows() != int64(len(refs)) {
				t.Fatalf("%d rows, want %d", got.NumRows(), len(refs))
			}
			for k, r := range refs {
				for c := 0; c < int(schema.NumFields()); c++ {
					g := got.Column(c)
					if r.seg == nil {
						if g.IsValid(k) {
							t.Fatalf("row %d column %d: %v, want NULL", k, c, g.ValueStr(k))
						}
						continue
					}
					w := r.seg.rec.Column(c)
					if g.IsValid(k) != w.IsValid(int(r.i)) || g.ValueStr(k) != w.ValueStr(int(r.i)) {
						t.Fatalf("row %d column %d: %v, want %v", k, c, g.ValueStr(k), w.ValueStr(int(r.i)))
					}
				}
			}
		})
	}
}
