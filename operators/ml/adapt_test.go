package ml

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

// imageRecord is n rows of (id, 1x4x4 image), pixel j of row r being
// (r*16 + j) / 64 (all in [0, 1]); row nullRow's image is null.
func imageRecord(t *testing.T, mem memory.Allocator, n, nullRow int) arrow.Record {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, TensorField("image", []int64{1, 4, 4})}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	img := b.Field(1).(*array.FixedSizeListBuilder)
	px := img.ValueBuilder().(*array.Float32Builder)
	for r := 0; r < n; r++ {
		ids.Append(int64(r))
		if r == nullRow {
			img.AppendNull()
			for j := 0; j < 16; j++ {
				px.Append(0)
			}
			continue
		}
		img.Append(true)
		for j := 0; j < 16; j++ {
			px.Append(float32(r*16+j) / 64)
		}
	}
	return b.NewRecord()
}

// runAdapt passes rec through an Adapt to side 2 under encoding.
func runAdapt(t *testing.T, mem memory.Allocator, rec arrow.Record, encoding string, got *builtin.Captured) *Adapt {
	t.Helper()
	a, err := NewAdapt(rec.Schema(), 1, 4, 2, encoding)
	if err != nil {
		t.Fatal(err)
	}
	g := &dataflow.Graph{Query: "adapt"}
	src := g.AddOperator(dataflow.OperatorSpec{Name: "src", Outputs: 1, Workers: []int{0},
		New: func(dataflow.Instance) (dataflow.Operator, error) {
			return builtin.NewSliceSource([]dataflow.Batch{{Epoch: 1, Record: rec}}), nil
		}})
	op := g.AddOperator(dataflow.OperatorSpec{Name: "adapt", Inputs: 1, Outputs: 1, Workers: []int{0},
		New: func(dataflow.Instance) (dataflow.Operator, error) { return NewAdapt(rec.Schema(), 1, 4, 2, encoding) }})
	sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, Workers: []int{0},
		New: func(dataflow.Instance) (dataflow.Operator, error) { return builtin.NewCapture(got, 0), nil }})
	g.Connect(src, 0, op, 0)
	g.Connect(op, 0, sink, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := dataflow.Run(ctx, g, dataflow.Config{Allocator: mem}); err != nil {
		t.Fatal(err)
	}
	return a
}

// The source side's adaptation resizes each image as ResizeArea does (what
// the model call would do after the link), keeps a null image null and the
// other columns as they are; with uint8 it packs each pixel in a byte,
// which the model call decodes to within 1/510.
func TestAdaptResizesAndEncodes(t *testing.T) {
	for _, enc := range []string{"float32", "uint8"} {
		t.Run(enc, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			var got builtin.Captured
			defer got.Release()
			rec := imageRecord(t, mem, 3, 1)
			src, _, err := TensorValues(rec.Column(1))
			if err != nil {
				t.Fatal(err)
			}
			want := make([][]float32, 3)
			for r := range want {
				want[r] = ResizeArea(nil, src[r*16:(r+1)*16], 4, 2)
			}
			a := runAdapt(t, mem, rec, enc, &got)
			bs := got.Batches()
			if len(bs) != 1 || bs[0].Record.NumRows() != 3 {
				t.Fatalf("batches %+v, want one of 3 rows", bs)
			}
			out := bs[0].Record
			if !out.Schema().Equal(a.Schema()) {
				t.Fatalf("schema %s, want %s", out.Schema(), a.Schema())
			}
			if s, _ := out.Schema().Field(1).Metadata.GetValue(ShapeKey); s != "1,2,2" {
				t.Errorf("shape %q, want 1,2,2", s)
			}
			if ids := out.Column(0).(*array.Int64); ids.Value(2) != 2 {
				t.Errorf("ids %v", ids)
			}
			col := out.Column(1)
			if !col.IsNull(1) || col.NullN() != 1 {
				t.Errorf("nulls: row 1 null %v, %d null, want row 1 alone", col.IsNull(1), col.NullN())
			}
			var vals []float32
			if enc == "uint8" {
				shape, ok := EncodedShape(out.Schema().Field(1))
				if !ok || FormatDims(shape) != "1,2,2" {
					t.Fatalf("encoded shape %v %v", shape, ok)
				}
				if vals, err = decodedValues(col); err != nil {
					t.Fatal(err)
				}
			} else if vals, _, err = TensorValues(col); err != nil {
				t.Fatal(err)
			}
			tol := float32(0)
			if enc == "uint8" {
				tol = 1.0 / 510
			}
			for _, r := range []int{0, 2} {
				for j := 0; j < 4; j++ {
					if d := vals[r*4+j] - want[r][j]; d > tol || d < -tol {
						t.Errorf("row %d pixel %d: %v, want %v", r, j, vals[r*4+j], want[r][j])
					}
				}
			}
		})
	}
}

// A model call reads a uint8-encoded column as the float32 pixels it
// stands for: the fake session's embedding is the sum of a row's four
// values.
func TestModelDecodesUint8(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var got builtin.Captured
	defer got.Release()
	rec := imageRecord(t, mem, 4, -1)
	src, _, err := TensorValues(rec.Column(1))
	if err != nil {
		t.Fatal(err)
	}
	runAdapt(t, mem, rec, "uint8", &got)
	sums, _ := embSums(t, mem, got.Batches()[0].Record)
	for r := 0; r < 4; r++ {
		var sum float32
		for _, v := range ResizeArea(nil, src[r*16:(r+1)*16], 4, 2) {
			sum += v
		}
		if d := sums[r] - sum; d > 4.0/510 || d < -4.0/510 {
			t.Errorf("row %d: the model saw pixels summing to %v, want %v", r, sums[r], sum)
		}
	}
}

func TestAdaptRejectsWhatItCannotResize(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, TensorField("image", []int64{1, 4, 4})}, nil)
	for _, c := range []struct {
		col, from, to int
		enc           string
	}{{0, 4, 2, "float32"}, {1, 5, 2, "float32"}, {1, 4, 8, "float32"}, {1, 4, 2, "jpeg"}, {3, 4, 2, "uint8"}} {
		if _, err := NewAdapt(schema, c.col, c.from, c.to, c.enc); err == nil {
			t.Errorf("NewAdapt(%+v): no error", c)
		}
	}
}
