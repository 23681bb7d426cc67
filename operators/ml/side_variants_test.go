package ml

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
)

// oneSession is a side variant of fakeSession for rows of side 1: its
// input is one value, its outputs fakeSession's, and its embedding is
// (1000 + the value, the value), so a row it answers is told apart from
// one fakeSession answered (the sum of the row resized up to 2x2: four
// times the value).
type oneSession struct{ calls []int }

func (f *oneSession) Inputs() []TensorInfo {
	return []TensorInfo{{Name: "x", DType: Float32, Shape: []int64{-1, 1, 1, 1}}}
}

func (f *oneSession) Outputs() []TensorInfo { return (&fakeSession{}).Outputs() }

func (f *oneSession) Run(in, out []Tensor) error {
	n := int(in[0].Shape[0])
	f.calls = append(f.calls, n)
	if len(in[0].F32) != n || len(out[0].F32) != 3*n || len(out[1].F32) != 2*n {
		return fmt.Errorf("one: bad buffers %d %d %d for %d rows", len(in[0].F32), len(out[0].F32), len(out[1].F32), n)
	}
	for r, x := range in[0].F32 {
		clear(out[0].F32[r*3 : r*3+3])
		out[0].F32[r*3+2] = 1
		out[1].F32[r*2], out[1].F32[r*2+1] = 1000+x, x
	}
	return nil
}

// sidesBatch is a record of a variable-side column of 2x2 images sent at
// sides 2 and 1: each row's values, nil for a null row.
func sidesBatch(t *testing.T, mem memory.Allocator, first int, rows [][]float32) arrow.Record {
	t.Helper()
	f := VariableField(TensorField("image", []int64{1, 2, 2}), []int{2, 1})
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, f}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	lb := b.Field(1).(*array.ListBuilder)
	vb := lb.ValueBuilder().(*array.Float32Builder)
	for r, row := range rows {
		ids.Append(int64(first + r))
		if row == nil {
			lb.AppendNull()
			continue
		}
		lb.Append(true)
		vb.AppendValues(row, nil)
	}
	return b.NewRecord()
}

// embOf is the first embedding value of each row of a result ("" rows
// failed), and the ids, to check the order.
func embOf(t *testing.T, out arrow.Record) (ids []int64, emb []float32, errs []string) {
	t.Helper()
	e, _, err := TensorValues(out.Column(4))
	if err != nil {
		t.Fatal(err)
	}
	es := out.Column(5).(*array.String)
	for r := 0; r < int(out.NumRows()); r++ {
		ids = append(ids, out.Column(0).(*array.Int64).Value(r))
		emb = append(emb, e[2*r])
		msg := ""
		if es.IsValid(r) {
			msg = es.Value(r)
		}
		errs = append(errs, msg)
	}
	return ids, emb, errs
}

// Rows sent at a side that a side variant takes run on it, natively (not
// resized up), in a call of their own; the others run on the bound
// model, resized as before; every record comes out in its row order, a
// null row failing alone. A model batch made of two records' rows is
// grouped across them. Each variant counts the rows it ran.
func TestSideVariantsRunTheirRows(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	full, one := &fakeSession{}, &oneSession{}
	a := sidesBatch(t, mem, 0, [][]float32{{1, 2, 3, 4}, {5}, {6}, nil, {1, 1, 1, 1}, {7}})
	defer a.Release()
	b := sidesBatch(t, mem, 6, [][]float32{{8}, {2, 2, 2, 2}})
	defer b.Release()
	m, err := Bind(full, a.Schema(), Config{Input: "image", Heads: testHeads, MaxBatch: 16,
		SideVariants: []SideVariant{{Name: "one", Side: 1, Session: one, SoloMs: 0.5}}})
	if err != nil {
		t.Fatal(err)
	}
	ja, err := m.newJob(mem, a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := m.newJob(mem, b)
	if err != nil {
		ja.release()
		t.Fatal(err)
	}
	// One model batch: a's last four rows and all of b's.
	m.runBatch([]segment{{j: ja, start: 0, n: 2}})
	m.runBatch([]segment{{j: ja, start: 2, n: 4}, {j: jb, start: 0, n: 2}})
	if ja.done != ja.n || jb.done != jb.n {
		t.Fatalf("done %d/%d and %d/%d rows", ja.done, ja.n, jb.done, jb.n)
	}
	outA, outB := ja.finish(mem), jb.finish(mem)
	defer outA.Release()
	defer outB.Release()
	ids, emb, errs := embOf(t, outA)
	idsB, embB, errsB := embOf(t, outB)
	ids, emb, errs = append(ids, idsB...), append(emb, embB...), append(errs, errsB...)
	if want := []int64{0, 1, 2, 3, 4, 5, 6, 7}; !slices.Equal(ids, want) {
		t.Fatalf("ids %v, want %v", ids, want)
	}
	// Full side: the sum; side 1: 1000 + the value (4 x the value had it
	// been resized up and run on the bound model).
	want := []float32{10, 1005, 1006, 0, 4, 1007, 1008, 8}
	for r := range want {
		if r == 3 {
			if errs[r] == "" {
				t.Errorf("the null row 3 was answered")
			}
			continue
		}
		if emb[r] != want[r] || errs[r] != "" {
			t.Errorf("row %d: emb %v error %q, want %v", r, emb[r], errs[r], want[r])
		}
	}
	// Bound model: row 0, 1 (batch 1); rows 3 (null, zeros), 4 and b's
	// row 1 (batch 2). Side variant: row 1, then rows 2, 5 and b's row 0.
	if !slices.Equal(full.calls, []int{1, 3}) || !slices.Equal(one.calls, []int{1, 3}) {
		t.Errorf("calls: bound %v, side variant %v; want [1 3] and [1 3]", full.calls, one.calls)
	}
	if got := m.VariantRows("full"); got["full"] != 4 || got["one"] != 4 {
		t.Errorf("rows by variant %v, want full:4 one:4", got)
	}
}

// Infer (one record, cut into MaxBatch calls) groups each call's rows.
func TestSideVariantsInfer(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	full, one := &fakeSession{}, &oneSession{}
	rec := sidesBatch(t, mem, 0, [][]float32{{3}, {1, 2, 3, 4}, {4}, {5}, {0, 0, 0, 1}})
	defer rec.Release()
	m, err := Bind(full, rec.Schema(), Config{Input: "image", Heads: testHeads, MaxBatch: 3,
		SideVariants: []SideVariant{{Name: "one", Side: 1, Session: one}}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Infer(mem, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	_, emb, _ := embOf(t, out)
	if want := []float32{1003, 10, 1004, 1005, 1}; !slices.Equal(emb, want) {
		t.Errorf("emb %v, want %v", emb, want)
	}
	if !slices.Equal(full.calls, []int{1, 1}) || !slices.Equal(one.calls, []int{2, 1}) {
		t.Errorf("calls: bound %v, side variant %v", full.calls, one.calls)
	}
	// A slice of the record (a list's offsets then start past its own).
	part := rec.NewSlice(1, 4)
	defer part.Release()
	out2, err := m.Infer(mem, part)
	if err != nil {
		t.Fatal(err)
	}
	defer out2.Release()
	if _, emb, _ := embOf(t, out2); !slices.Equal(emb, []float32{10, 1004, 1005}) {
		t.Errorf("sliced: emb %v, want [10 1004 1005]", emb)
	}
}

// A side variant must take a side under the column's, rows of it, and
// give the bound model's outputs; only a variable-side column has them.
func TestSideVariantsBindErrors(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := sidesBatch(t, mem, 0, [][]float32{{3}})
	defer rec.Release()
	for _, c := range []struct {
		name string
		in   *arrow.Schema
		sv   SideVariant
		want error
	}{
		{"side of the column", rec.Schema(), SideVariant{Name: "x", Side: 2, Session: &oneSession{}}, ErrConfig},
		{"rows of another size", rec.Schema(), SideVariant{Name: "x", Side: 1, Session: &fakeSession{}}, ErrSchema},
		{"other outputs", rec.Schema(), SideVariant{Name: "x", Side: 1, Session: &otherOutputs{}}, ErrSchema},
		{"fixed-size column", inputSchema(), SideVariant{Name: "x", Side: 1, Session: &oneSession{}}, ErrConfig},
	} {
		_, err := Bind(&fakeSession{}, c.in, Config{Input: c.in.Field(1).Name, Heads: testHeads, SideVariants: []SideVariant{c.sv}})
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

type otherOutputs struct{ oneSession }

func (*otherOutputs) Outputs() []TensorInfo {
	return []TensorInfo{{Name: "probs", DType: Float32, Shape: []int64{-1, 4}}, {Name: "emb", DType: Float32, Shape: []int64{-1, 2}}}
}

// The lazy drop weighs a batch that a side variant runs whole by that
// variant's one-row call: with the bound model's 50 ms, a batch 20 ms
// from its deadline is dropped; run by a 1 ms side variant it is not.
func TestSideVariantLazyDropUsesItsProfile(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, c := range []struct {
		rows    [][]float32
		dropped bool
	}{{[][]float32{{1}, {2}}, false}, {[][]float32{{1}, {1, 2, 3, 4}}, true}, {[][]float32{{1, 2, 3, 4}}, true}} {
		rec := sidesBatch(t, mem, 0, c.rows)
		m, err := Bind(&fakeSession{}, rec.Schema(), Config{Input: "image", Heads: testHeads,
			SideVariants: []SideVariant{{Name: "one", Side: 1, Session: &oneSession{}, SoloMs: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		op, err := NewOperator(m, BatchConfig{MaxBatch: 16, MaxDelay: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		op.Deadline, op.SoloMs = 100*time.Millisecond, 50
		j, err := m.newJob(mem, rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		ingest := now.Add(-80 * time.Millisecond)
		o := op
		o.CountDropsIn(&dataflow.Drops{})
		o.pending = append(o.pending, &pendingBatch{j: j, ingest: ingest.UnixNano()})
		o.b.Push(now, j.n)
		o.dropLate(now)
		p := o.pending[0]
		if p.dropped != c.dropped {
			t.Errorf("rows %v: dropped %v, want %v", c.rows, p.dropped, c.dropped)
		}
		j.release()
	}
}

// A LATENCY-bound call counts the rows its variant ran (ran_<variant>),
// side variants or not, so that a query's generations on different
// variants add up; a call without a bound or side variants does not.
func TestOperatorCountsRowsByVariantUnderLatency(t *testing.T) {
	m := bindFake(t, &fakeSession{}, testHeads, 8)
	for _, c := range []struct {
		deadline time.Duration
		want     bool
	}{{0, false}, {100 * time.Millisecond, true}} {
		op, err := NewOperator(m, BatchConfig{MaxBatch: 8, MaxDelay: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		op.Deadline, op.Attrs = c.deadline, map[string]string{"variant": "fit-14"}
		if _, got := op.Counters()["ran_fit-14"]; got != c.want {
			t.Errorf("deadline %v: ran_fit-14 counted %v, want %v (%v)", c.deadline, got, c.want, op.Counters())
		}
	}
}

// Rows of a uint8-encoded variable-side column reach a side variant
// decoded (value/255), natively.
func TestSideVariantsDecodeUint8(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	fixed := arrow.Field{Name: "image", Type: arrow.FixedSizeListOf(4, arrow.PrimitiveTypes.Uint8),
		Metadata: arrow.NewMetadata([]string{ShapeKey, EncodingKey}, []string{"1,2,2", "uint8"})}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, VariableField(fixed, []int{2, 1})}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	lb := b.Field(1).(*array.ListBuilder)
	vb := lb.ValueBuilder().(*array.Uint8Builder)
	for i, row := range [][]byte{{51}, {255, 0, 0, 0}, {102}} {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		lb.Append(true)
		vb.AppendValues(row, nil)
	}
	rec := b.NewRecord()
	defer rec.Release()
	m, err := Bind(&fakeSession{}, schema, Config{Input: "image", Heads: testHeads,
		SideVariants: []SideVariant{{Name: "one", Side: 1, Session: &oneSession{}}}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Infer(mem, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if _, emb, _ := embOf(t, out); !slices.Equal(emb, []float32{1000.2, 1, 1000.4}) {
		t.Errorf("emb %v, want [1000.2 1 1000.4]", emb)
	}
}
