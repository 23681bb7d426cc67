package ml

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// pairSession is a two-input model: a [N,2] and b [N,3]; probs[c] = b[c] +
// a[0] - a[1]. A NaN anywhere in a row fails the whole call.
type pairSession struct{ calls []int }

func (*pairSession) Inputs() []TensorInfo {
	return []TensorInfo{
		{Name: "a", DType: Float32, Shape: []int64{-1, 2}},
		{Name: "b", DType: Float32, Shape: []int64{-1, 3}},
	}
}

func (*pairSession) Outputs() []TensorInfo {
	return []TensorInfo{{Name: "probs", DType: Float32, Shape: []int64{-1, 3}}}
}

func (p *pairSession) Run(in, out []Tensor) error {
	if len(in) != 2 {
		return fmt.Errorf("pair: %d inputs", len(in))
	}
	n := int(in[0].Shape[0])
	p.calls = append(p.calls, n)
	a, b := in[0].F32, in[1].F32
	if in[1].Shape[0] != int64(n) || len(a) != 2*n || len(b) != 3*n || len(out[0].F32) != 3*n {
		return fmt.Errorf("pair: bad buffers %v %v", in[0].Shape, in[1].Shape)
	}
	for _, v := range append(append([]float32(nil), a...), b...) {
		if math.IsNaN(float64(v)) {
			return errors.New("pair: NaN input")
		}
	}
	for r := 0; r < n; r++ {
		for c := 0; c < 3; c++ {
			out[0].F32[r*3+c] = b[r*3+c] + a[r*2] - a[r*2+1]
		}
	}
	return nil
}

func pairSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		TensorField("img", []int64{2}),
		TensorField("q", []int64{1, 3}), // same values as [3]
	}, nil)
}

// pairRecord: row i has img (i, 0) and q one-hot at i%3, so the label is i%3
// and the score i+1. Rows in nanA/nanB get a NaN in that input; rows in nullA
// or nullB are null there.
func pairRecord(t testing.TB, mem memory.Allocator, first, n int, nanB, nullA, nullB map[int]bool) arrow.Record {
	t.Helper()
	b := array.NewRecordBuilder(mem, pairSchema())
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	ab := b.Field(1).(*array.FixedSizeListBuilder)
	qb := b.Field(2).(*array.FixedSizeListBuilder)
	for r := 0; r < n; r++ {
		i := first + r
		ids.Append(int64(i))
		if nullA[i] {
			ab.AppendNull()
		} else {
			ab.Append(true)
			ab.ValueBuilder().(*array.Float32Builder).AppendValues([]float32{float32(i), 0}, nil)
		}
		if nullB[i] {
			qb.AppendNull()
		} else {
			qb.Append(true)
			row := []float32{0, 0, 0}
			row[i%3] = 1
			if nanB[i] {
				row[2] = float32(math.NaN())
			}
			qb.ValueBuilder().(*array.Float32Builder).AppendValues(row, nil)
		}
	}
	return b.NewRecord()
}

func checkPairRows(t *testing.T, out arrow.Record, first int, failed map[int]string) {
	t.Helper()
	labels := out.Column(3).(*array.Int64)
	scores := out.Column(4).(*array.Float32)
	errs := out.Column(5).(*array.String)
	for r := 0; r < int(out.NumRows()); r++ {
		i := first + r
		if want, bad := failed[i]; bad {
			if !labels.IsNull(r) || errs.IsNull(r) || !strings.Contains(errs.Value(r), want) {
				t.Errorf("row %d: want a failure with %q, got label null=%v error %q", i, want, labels.IsNull(r), errs.Value(r))
			}
			continue
		}
		if labels.IsNull(r) || labels.Value(r) != int64(i%3) || scores.Value(r) != float32(i+1) || !errs.IsNull(r) {
			t.Errorf("row %d: label %v score %v error %q", i, labels.Value(r), scores.Value(r), errs.Value(r))
		}
	}
}

var pairHeads = []Head{{Kind: Classify, Output: "probs"}}

func TestMultiInputInferNullsAndSplits(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	p := &pairSession{}
	m, err := Bind(p, pairSchema(), Config{Inputs: []string{"img", "q"}, Heads: pairHeads, MaxBatch: 8})
	if err != nil {
		t.Fatal(err)
	}
	in := pairRecord(t, mem, 0, 10, map[int]bool{5: true}, map[int]bool{2: true}, map[int]bool{7: true})
	defer in.Release()
	out, err := m.Infer(mem, in)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if got := fieldNames(out.Schema()); got != "id, img, q, label, score, error" {
		t.Fatalf("columns %s", got)
	}
	checkPairRows(t, out, 0, map[int]string{2: `input "img" is null`, 5: "NaN", 7: `input "q" is null`})
	// Rows 0-7: the call with row 5's NaN fails and halves down to row 5
	// alone (8, 4 ok, 4, 2, 1, 1 ok, 2 ok), then rows 8-9.
	if fmt.Sprint(p.calls) != "[8 4 4 2 1 1 2 2]" {
		t.Errorf("calls %v", p.calls)
	}
}

// TestMultiInputRunnerGathersAcrossRecords batches rows of several records
// into one call, which copies each input's rows into its own scratch buffer.
func TestMultiInputRunnerGathersAcrossRecords(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	p := &pairSession{}
	m, err := Bind(p, pairSchema(), Config{Inputs: []string{"img", "q"}, Heads: pairHeads, MaxBatch: 8})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(m, mem, BatchConfig{MaxBatch: 8, MaxDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 4; k++ {
		rec := pairRecord(t, mem, 3*k, 3, nil, nil, nil)
		if err := r.Submit(rec, k); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	r.Close()
	for k, res := range collect(t, r, 4) {
		if res.Err != nil || res.Tag != k {
			t.Fatalf("result %d: %v tag %v", k, res.Err, res.Tag)
		}
		checkPairRows(t, res.Record, 3*k, nil)
		res.Record.Release()
	}
	if p.calls[0] != 8 {
		t.Errorf("first call %d rows, want 8 taken across records (calls %v)", p.calls[0], p.calls)
	}
}

func TestMultiInputBindErrors(t *testing.T) {
	p := &pairSession{}
	_, err := Bind(p, pairSchema(), Config{Inputs: []string{"img"}, Heads: pairHeads})
	if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), "2 inputs") {
		t.Errorf("too few columns: %v", err)
	}
	_, err = Bind(p, pairSchema(), Config{Inputs: []string{"q", "img"}, Heads: pairHeads})
	if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), `argument 1 (column "q")`) ||
		!strings.Contains(err.Error(), "[1,3]") || !strings.Contains(err.Error(), "a float32[N,2]") || !strings.Contains(err.Error(), "[2]") {
		t.Errorf("swapped columns should name the argument, the input and both shapes: %v", err)
	}
	_, err = Bind(p, pairSchema(), Config{Inputs: []string{"img", "id"}, Heads: pairHeads})
	if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), "argument 2") || !strings.Contains(err.Error(), "b float32[N,3]") {
		t.Errorf("a non-tensor argument: %v", err)
	}
	_, err = Bind(p, pairSchema(), Config{Input: "img", Heads: pairHeads})
	if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), "Config.Inputs") {
		t.Errorf("one column for two inputs: %v", err)
	}
	// By index: the second argument picks field 2 even though names are ignored.
	if _, err := Bind(p, pairSchema(), Config{Inputs: []string{"x", "y"}, InputIndexes: []int{1, 2}, Heads: pairHeads}); err != nil {
		t.Errorf("by index: %v", err)
	}
	if _, err := Bind(p, pairSchema(), Config{Inputs: []string{"x", "y"}, InputIndexes: []int{1, 9}, Heads: pairHeads}); !errors.Is(err, ErrSchema) {
		t.Errorf("index out of range: %v", err)
	}
}

// TestLabelOnlyHead maps a lone label column (AS a(answer)) onto a class
// output: the label comes without its score.
func TestLabelOnlyHead(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	p := &pairSession{}
	heads, err := PlanHeads(p, []arrow.Field{{Name: "answer", Type: arrow.PrimitiveTypes.Int64}})
	if err != nil || len(heads) != 1 || heads[0].Kind != Classify || fmt.Sprint(heads[0].Columns) != "[answer]" {
		t.Fatalf("heads %+v %v", heads, err)
	}
	m, err := Bind(p, pairSchema(), Config{Inputs: []string{"img", "q"}, Heads: heads})
	if err != nil {
		t.Fatal(err)
	}
	in := pairRecord(t, mem, 0, 5, nil, nil, map[int]bool{1: true})
	defer in.Release()
	out, err := m.Infer(mem, in)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if got := fieldNames(out.Schema()); got != "id, img, q, answer, error" {
		t.Fatalf("columns %s", got)
	}
	answers := out.Column(3).(*array.Int64)
	for r := 0; r < 5; r++ {
		if r == 1 {
			if !answers.IsNull(r) {
				t.Errorf("row 1 has a null input but answer %d", answers.Value(r))
			}
			continue
		}
		if answers.IsNull(r) || answers.Value(r) != int64(r%3) {
			t.Errorf("row %d: answer %v", r, answers.Value(r))
		}
	}
}

// TestColumnsOutliveTheirRecord: the label and score arrays live in the
// output record's own memory; a column kept after the record is released
// still reads its values, and releasing it frees the buffers.
func TestColumnsOutliveTheirRecord(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	m := bindFake(t, &fakeSession{}, []Head{{Kind: Classify, Output: "probs"}}, 8)
	in := inputRecord(t, mem, 1, 6, nil, map[int]bool{3: true})
	out, err := m.Infer(mem, in)
	in.Release()
	if err != nil {
		t.Fatal(err)
	}
	labels, scores := out.Column(2).(*array.Int64), out.Column(3).(*array.Float32)
	labels.Retain()
	scores.Retain()
	out.Release()
	for r := 0; r < 6; r++ {
		i := r + 1
		if i == 3 {
			if labels.IsValid(r) || scores.IsValid(r) {
				t.Errorf("row %d: a null input should give null outputs", r)
			}
			continue
		}
		if labels.Value(r) != int64(i%3) || scores.Value(r) != float32(i) {
			t.Errorf("row %d: %d %v", r, labels.Value(r), scores.Value(r))
		}
	}
	if labels.NullN() != 1 || labels.Len() != 6 {
		t.Errorf("labels %v", labels)
	}
	labels.Release()
	scores.Release()
}
