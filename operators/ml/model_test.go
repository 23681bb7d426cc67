package ml

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// fakeSession is a model on [N,4] rows: probs[c] is row[c] for c < 3 (so the label
// is the argmax of the first three values), emb is (sum, max). A row whose first
// value is NaN makes the whole call fail, as a real runtime rejecting a batch does.
type fakeSession struct {
	calls []int // batch size of every Run
}

func (f *fakeSession) Inputs() []TensorInfo {
	return []TensorInfo{{Name: "x", DType: Float32, Shape: []int64{-1, 4}}}
}

func (f *fakeSession) Outputs() []TensorInfo {
	return []TensorInfo{
		{Name: "probs", DType: Float32, Shape: []int64{-1, 3}},
		{Name: "emb", DType: Float32, Shape: []int64{-1, 2}},
	}
}

func (f *fakeSession) Run(in, out []Tensor) error {
	n := int(in[0].Shape[0])
	f.calls = append(f.calls, n)
	x := in[0].F32
	if len(x) != n*4 || len(out[0].F32) != n*3 || len(out[1].F32) != n*2 {
		return fmt.Errorf("fake: bad buffers %d %d %d for %d rows", len(x), len(out[0].F32), len(out[1].F32), n)
	}
	for r := 0; r < n; r++ {
		if math.IsNaN(float64(x[r*4])) {
			return errors.New("fake: NaN input")
		}
	}
	for r := 0; r < n; r++ {
		row := x[r*4 : r*4+4]
		copy(out[0].F32[r*3:r*3+3], row[:3])
		out[1].F32[r*2] = row[0] + row[1] + row[2] + row[3]
		out[1].F32[r*2+1] = max(row[0], row[1], row[2], row[3])
	}
	return nil
}

func inputSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		TensorField("x", []int64{2, 2}),
	}, nil)
}

// inputRecord has n rows; row i is (i%3==0 ? i : 0, i%3==1 ? i : 0, i%3==2 ? i : 0, 1):
// its label is i%3 and its score i. Rows in nan get NaN; rows in null are null.
func inputRecord(t testing.TB, mem memory.Allocator, first, n int, nan, null map[int]bool) arrow.Record {
	t.Helper()
	b := array.NewRecordBuilder(mem, inputSchema())
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	tb := b.Field(1).(*array.FixedSizeListBuilder)
	vb := tb.ValueBuilder().(*array.Float32Builder)
	for r := 0; r < n; r++ {
		i := first + r
		ids.Append(int64(i))
		if null[i] {
			tb.AppendNull() // appends the row's four child slots itself
			continue
		}
		tb.Append(true)
		row := []float32{0, 0, 0, 1}
		row[i%3] = float32(i)
		if nan[i] {
			row[0] = float32(math.NaN())
		}
		vb.AppendValues(row, nil)
	}
	return b.NewRecord()
}

func bindFake(t *testing.T, f *fakeSession, heads []Head, maxBatch int) *Model {
	t.Helper()
	m, err := Bind(f, inputSchema(), Config{Input: "x", Heads: heads, MaxBatch: maxBatch})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var testHeads = []Head{
	{Kind: Classify, Output: "probs", Labels: []string{"a", "b", "c"}},
	{Kind: Embed, Output: "emb", Columns: []string{"e"}},
}

func TestInferClassifyAndEmbed(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	f := &fakeSession{}
	m := bindFake(t, f, testHeads, 4)
	in := inputRecord(t, mem, 1, 10, nil, nil)
	defer in.Release()
	out, err := m.Infer(mem, in)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	want := "id, x, label, score, e, error"
	if got := fieldNames(out.Schema()); got != want {
		t.Fatalf("columns %q, want %q", got, want)
	}
	if fmt.Sprint(f.calls) != "[4 4 2]" {
		t.Errorf("batches %v, want [4 4 2]", f.calls)
	}
	labels := out.Column(2).(*array.String)
	scores := out.Column(3).(*array.Float32)
	emb, _, err := TensorValues(out.Column(4))
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < 10; r++ {
		i := r + 1
		if labels.Value(r) != []string{"a", "b", "c"}[i%3] || scores.Value(r) != float32(i) {
			t.Errorf("row %d: label %s score %v", r, labels.Value(r), scores.Value(r))
		}
		if emb[2*r] != float32(i+1) || emb[2*r+1] != float32(i) {
			t.Errorf("row %d: embedding %v", r, emb[2*r:2*r+2])
		}
	}
	if out.Column(5).NullN() != 10 {
		t.Errorf("error column should be all null")
	}
	shape, err := FieldShape(out.Schema().Field(4))
	if err != nil || FormatDims(shape) != "2" {
		t.Errorf("embedding shape %v %v", shape, err)
	}
}

func TestInferIntLabelsScalarAndSlicedInput(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	f := &fakeSession{}
	m := bindFake(t, f, []Head{{Kind: Classify, Output: "probs", Columns: []string{"cls", "p"}}}, 32)
	full := inputRecord(t, mem, 0, 12, nil, nil)
	defer full.Release()
	in := full.NewSlice(5, 9) // rows 5..8: the offset must be honoured
	defer in.Release()
	out, err := m.Infer(mem, in)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	cls := out.Column(2).(*array.Int64)
	for r := 0; r < 4; r++ {
		if cls.Value(r) != int64((r+5)%3) {
			t.Errorf("row %d: class %d", r, cls.Value(r))
		}
	}
}

func TestFailingRowIsMarkedAndBatchGoesOn(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	f := &fakeSession{}
	m := bindFake(t, f, testHeads, 8)
	in := inputRecord(t, mem, 0, 8, map[int]bool{3: true}, map[int]bool{6: true})
	defer in.Release()
	out, err := m.Infer(mem, in)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	labels := out.Column(2).(*array.String)
	errs := out.Column(5).(*array.String)
	for r := 0; r < 8; r++ {
		switch r {
		case 3:
			if !labels.IsNull(r) || !strings.Contains(errs.Value(r), "NaN input") {
				t.Errorf("row 3 should fail with the session's error, got label null=%v err=%q", labels.IsNull(r), errs.Value(r))
			}
		case 6:
			if !labels.IsNull(r) || !strings.Contains(errs.Value(r), `input "x" is null`) {
				t.Errorf("row 6 should fail as null input, got %q", errs.Value(r))
			}
		default:
			if labels.IsNull(r) || !errs.IsNull(r) || labels.Value(r) != []string{"a", "b", "c"}[r%3] {
				t.Errorf("row %d should succeed: label %q err %q", r, labels.Value(r), errs.Value(r))
			}
		}
	}
	if out.Column(4).NullN() != 2 || out.Column(3).NullN() != 2 {
		t.Errorf("output nulls: emb %d score %d, want 2", out.Column(4).NullN(), out.Column(3).NullN())
	}
	// One failing call of 8, then halves until row 3 is alone: 8 4 2 2 1 1 4.
	if fmt.Sprint(f.calls) != "[8 4 2 2 1 1 4]" {
		t.Errorf("calls %v", f.calls)
	}
}

func TestBindErrors(t *testing.T) {
	f := &fakeSession{}
	cases := []struct {
		name string
		cfg  Config
		want error
	}{
		{"missing column", Config{Input: "nope", Heads: testHeads}, ErrSchema},
		{"not a tensor", Config{Input: "id", Heads: testHeads}, ErrSchema},
		{"missing output", Config{Input: "x", Heads: []Head{{Kind: Classify, Output: "logits"}}}, ErrSchema},
		{"label count", Config{Input: "x", Heads: []Head{{Kind: Classify, Output: "probs", Labels: []string{"a"}}}}, ErrSchema},
		{"scalar of a vector", Config{Input: "x", Heads: []Head{{Kind: Scalar, Output: "emb"}}}, ErrSchema},
		{"duplicate column", Config{Input: "x", Heads: []Head{{Kind: Embed, Output: "emb", Columns: []string{"id"}}}}, ErrSchema},
		{"no heads", Config{Input: "x"}, ErrConfig},
		{"negative batch", Config{Input: "x", Heads: testHeads, MaxBatch: -1}, ErrConfig},
	}
	for _, c := range cases {
		if _, err := Bind(f, inputSchema(), c.cfg); !errors.Is(err, c.want) {
			t.Errorf("%s: want %v, got %v", c.name, c.want, err)
		}
	}
	wrong := arrow.NewSchema([]arrow.Field{TensorField("x", []int64{5})}, nil)
	_, err := Bind(f, wrong, Config{Input: "x", Heads: testHeads})
	if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), "[5]") || !strings.Contains(err.Error(), "x float32[N,4]") {
		t.Errorf("shape mismatch should name both shapes: %v", err)
	}
}

func TestTensorColumnMetadata(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	f := TensorField("image", []int64{1, 28, 28})
	shape, err := FieldShape(f)
	if err != nil || FormatDims(shape) != "1,28,28" {
		t.Fatalf("shape %v %v", shape, err)
	}
	bad := f
	bad.Metadata = arrow.NewMetadata([]string{ShapeKey}, []string{"2,28,28"})
	if _, err := FieldShape(bad); !errors.Is(err, ErrSchema) {
		t.Errorf("shape/list size mismatch: %v", err)
	}
	col, err := NewTensorColumn(mem, []int64{2}, []float32{1, 2, 3, 4, 5, 6})
	if err != nil {
		t.Fatal(err)
	}
	defer col.Release()
	vals, size, err := TensorValues(col)
	if err != nil || size != 2 || len(vals) != 6 || vals[5] != 6 {
		t.Errorf("values %v size %d %v", vals, size, err)
	}
	if _, err := NewTensorColumn(mem, []int64{4}, make([]float32, 6)); !errors.Is(err, ErrSchema) {
		t.Errorf("ragged values: %v", err)
	}
}

func TestOutputRecordBehavesAsArrowRecord(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	m := bindFake(t, &fakeSession{}, []Head{{Kind: Classify, Output: "probs"}}, 4)
	in := inputRecord(t, mem, 0, 5, nil, nil)
	defer in.Release()
	out, err := m.Infer(mem, in)
	if err != nil {
		t.Fatal(err)
	}
	out.Retain()
	out.Release()
	sl := out.NewSlice(1, 3)
	if sl.NumRows() != 2 || sl.Column(2).(*array.Int64).Value(0) != 1 {
		t.Errorf("slice rows %d", sl.NumRows())
	}
	sl.Release()
	js, err := out.MarshalJSON()
	if err != nil || !strings.Contains(string(js), `"label":2`) {
		t.Errorf("json %s %v", js, err)
	}
	if out.ColumnName(3) != "score" || out.NumCols() != 5 || len(out.Columns()) != 5 {
		t.Errorf("columns %v", fieldNames(out.Schema()))
	}
	rec2, err := out.SetColumn(0, out.Column(0))
	if err != nil {
		t.Fatal(err)
	}
	rec2.Release()
	out.Release()
}
