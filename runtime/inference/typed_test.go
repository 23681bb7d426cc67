package inference

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/runtime/modelzoo"
)

// writeTypedModel writes, with the zoo's ONNX writer, a model of one input
// of each element type the typed rule maps, whose every output depends on
// its inputs:
//
//	id   int64 [N,1]   = cam (int32) * 1000000 + ts (int64)
//	off  bool  [N,1]   = Not(on)
//	h2   float16 [N,2] = h (float16) * 2
//	x2   double [N,1]  = x (double) + x
//	rev  uint8 [N,4]   = b (uint8 [N,4]) reversed
//	tag  uint8 [N,4]   = b + 1 (as bytes wrap)
func writeTypedModel(t *testing.T, dir string) string {
	t.Helper()
	n := modelzoo.Dim{Param: "N"}
	one := []modelzoo.Dim{n, {Value: 1}}
	i64 := func(vs ...int64) []byte {
		var b []byte
		for _, v := range vs {
			b = append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24), byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56))
		}
		return b
	}
	g := &modelzoo.Graph{
		Name: "typed",
		Inputs: []modelzoo.ValueInfo{
			{Name: "cam", Shape: one, Elem: modelzoo.Int32},
			{Name: "ts", Shape: one, Elem: modelzoo.Int64},
			{Name: "on", Shape: one, Elem: modelzoo.Bool},
			{Name: "h", Shape: []modelzoo.Dim{n, {Value: 2}}, Elem: modelzoo.Float16},
			{Name: "x", Shape: one, Elem: modelzoo.Double},
			{Name: "b", Shape: []modelzoo.Dim{n, {Value: 4}}, Elem: modelzoo.Uint8},
		},
		Outputs: []modelzoo.ValueInfo{
			{Name: "id", Shape: one, Elem: modelzoo.Int64},
			{Name: "off", Shape: one, Elem: modelzoo.Bool},
			{Name: "h2", Shape: []modelzoo.Dim{n, {Value: 2}}, Elem: modelzoo.Float16},
			{Name: "x2", Shape: one, Elem: modelzoo.Double},
			{Name: "rev", Shape: []modelzoo.Dim{n, {Value: 4}}, Elem: modelzoo.Uint8},
			{Name: "tag", Shape: []modelzoo.Dim{n, {Value: 4}}, Elem: modelzoo.Uint8},
		},
		Initializers: []modelzoo.Initializer{
			{Name: "million", Dims: []int64{1}, Elem: modelzoo.Int64, Raw: i64(1000000)},
			{Name: "two", Dims: []int64{1}, Data: []float32{2}},
			{Name: "order", Dims: []int64{4}, Elem: modelzoo.Int64, Raw: i64(3, 2, 1, 0)},
			{Name: "one32", Dims: []int64{1}, Elem: modelzoo.Int32, Raw: []byte{1, 0, 0, 0}},
		},
		Nodes: []modelzoo.Node{
			{OpType: "Cast", Name: "cam64", Inputs: []string{"cam"}, Outputs: []string{"cam64"}, Attrs: []modelzoo.Attr{modelzoo.IntAttr("to", int64(modelzoo.Int64))}},
			{OpType: "Mul", Name: "scale", Inputs: []string{"cam64", "million"}, Outputs: []string{"camk"}},
			{OpType: "Add", Name: "id", Inputs: []string{"camk", "ts"}, Outputs: []string{"id"}},
			{OpType: "Not", Name: "off", Inputs: []string{"on"}, Outputs: []string{"off"}},
			{OpType: "Cast", Name: "hf", Inputs: []string{"h"}, Outputs: []string{"hf"}, Attrs: []modelzoo.Attr{modelzoo.IntAttr("to", int64(modelzoo.Float))}},
			{OpType: "Mul", Name: "hf2", Inputs: []string{"hf", "two"}, Outputs: []string{"hf2"}},
			{OpType: "Cast", Name: "h2", Inputs: []string{"hf2"}, Outputs: []string{"h2"}, Attrs: []modelzoo.Attr{modelzoo.IntAttr("to", int64(modelzoo.Float16))}},
			{OpType: "Add", Name: "x2", Inputs: []string{"x", "x"}, Outputs: []string{"x2"}},
			{OpType: "Gather", Name: "rev", Inputs: []string{"b", "order"}, Outputs: []string{"rev"}, Attrs: []modelzoo.Attr{modelzoo.IntAttr("axis", 1)}},
			// uint8 Add is opset 14: through int32 (256 wraps to 0 as a
			// byte does).
			{OpType: "Cast", Name: "b32", Inputs: []string{"b"}, Outputs: []string{"b32"}, Attrs: []modelzoo.Attr{modelzoo.IntAttr("to", int64(modelzoo.Int32))}},
			{OpType: "Add", Name: "b32p", Inputs: []string{"b32", "one32"}, Outputs: []string{"b32p"}},
			{OpType: "Cast", Name: "tag", Inputs: []string{"b32p"}, Outputs: []string{"tag"}, Attrs: []modelzoo.Attr{modelzoo.IntAttr("to", int64(modelzoo.Uint8))}},
		},
	}
	path := filepath.Join(dir, "typed.onnx")
	if err := g.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// typedRow is one row of the typed test table.
type typedRow struct {
	id   int64
	cam  int32
	ts   int64
	on   bool
	h    [2]float32
	x    float64
	b    []byte // nil: a null BLOB
	name string
}

func typedRows(n int) []typedRow {
	rows := make([]typedRow, n)
	for i := range rows {
		rows[i] = typedRow{id: int64(i), cam: int32(i%7 - 3), ts: 1_700_000_000_000_000 + int64(i)*37, on: i%3 == 0,
			h: [2]float32{float32(i%5) * 0.5, -float32(i % 11)}, x: float64(i) * 1.25e300 / float64(n),
			b: []byte{byte(i), byte(i * 3), 0xff, byte(255 - i)}, name: fmt.Sprintf("r%d", i)}
	}
	rows[5].b = nil                      // a null: that row's byte outputs are null
	rows[6].b = []byte{1, 2}             // shorter: zero-padded
	rows[8].b = []byte{1, 2, 3, 4, 5, 6} // longer than the input's row: a failed row
	return rows
}

func writeTypedTable(t *testing.T, path string, rows []typedRow) {
	t.Helper()
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "cam", Type: arrow.PrimitiveTypes.Int32},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "h", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32)},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64},
		{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true},
	}, nil)
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	for _, r := range rows {
		rb.Field(0).(*array.Int64Builder).Append(r.id)
		rb.Field(1).(*array.Int32Builder).Append(r.cam)
		rb.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts))
		rb.Field(3).(*array.BooleanBuilder).Append(r.on)
		hb := rb.Field(4).(*array.FixedSizeListBuilder)
		hb.Append(true)
		hb.ValueBuilder().(*array.Float32Builder).AppendValues(r.h[:], nil)
		rb.Field(5).(*array.Float64Builder).Append(r.x)
		if r.b == nil {
			rb.Field(6).AppendNull()
		} else {
			rb.Field(6).(*array.BinaryBuilder).Append(r.b)
		}
	}
	rec := rb.NewRecord()
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(schema))
	if err == nil {
		err = w.Write(rec)
	}
	if err == nil {
		err = w.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// typedResult collects the query's rows by id, as text.
type typedResult struct{ got map[int64][]string }

func (r *typedResult) Write(rec arrow.Record) error {
	ids := rec.Column(0).(*array.Int64)
	for i := range int(rec.NumRows()) {
		var row []string
		for c := 1; c < int(rec.NumCols()); c++ {
			col := rec.Column(c)
			if bc, ok := col.(*array.Binary); ok && bc.IsValid(i) {
				row = append(row, string(bc.Value(i))) // the bytes, not base64
				continue
			}
			row = append(row, col.ValueStr(i))
		}
		r.got[ids.Value(i)] = row
	}
	return nil
}
func (r *typedResult) Close() error { return nil }

func runTypedScript(t *testing.T, dir, script string, mem memory.Allocator) (*typedResult, error) {
	t.Helper()
	out := &typedResult{got: map[int64][]string{}}
	rt := New(Config{Batch: ml.BatchConfig{MaxBatch: 8}})
	err := exec.RunScript(context.Background(), filepath.Join(dir, "typed.sql"), script, exec.ScriptOptions{
		Options:   exec.Options{Allocator: mem, Lateral: rt.Lateral, BatchSize: 10},
		NewOutput: func() (sinks.Writer, error) { return out, nil },
	})
	return out, err
}

// TestTypedModelCall: a model of int32, int64, bool, float16, double and
// uint8 inputs runs on INT, TIMESTAMP, BOOLEAN, TENSOR, DOUBLE and BLOB
// columns, and gives BIGINT, BOOLEAN, TENSOR, DOUBLE, BLOB and VARCHAR
// columns, each row's answer computed from that row's values (through ONNX
// Runtime, checked against the same arithmetic in Go); a null or too long
// BLOB fails its row only.
func TestTypedModelCall(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	model := writeTypedModel(t, dir)
	rows := typedRows(40)
	writeTypedTable(t, filepath.Join(dir, "t.arrow"), rows)
	script := fmt.Sprintf(`
CREATE MODEL Mix TASK 'typed'
  INPUTS (cam INT, ts TIMESTAMP, flag BOOLEAN, h TENSOR(FLOAT, 2), x DOUBLE, b BLOB)
  OUTPUTS (id BIGINT, off BOOLEAN, h2 TENSOR(FLOAT, 2), x2 DOUBLE, rev BLOB, tag VARCHAR)
  VARIANTS (v1 FROM '%s');
CREATE TABLE t (id BIGINT, cam INT, ts TIMESTAMP, flag BOOLEAN, h TENSOR(FLOAT, 2), x DOUBLE, b BLOB) FROM FILE '%s' FORMAT ARROW;
SELECT t.id, m.key, m.off, m.h2, m.x2, m.rev, m.tag
FROM t CROSS JOIN LATERAL Mix(t.cam, t.ts, t.flag, t.h, t.x, t.b) AS m(key, off, h2, x2, rev, tag);
`, model, filepath.Join(dir, "t.arrow"))
	out, err := runTypedScript(t, dir, script, mem)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.got) != len(rows) {
		t.Fatalf("%d rows, want %d", len(out.got), len(rows))
	}
	for _, r := range rows {
		got := out.got[r.id]
		var want []string
		if r.b == nil || len(r.b) > 4 {
			// The BLOB fails the whole call of its row.
			want = []string{"(null)", "(null)", "(null)", "(null)", "(null)", "(null)"}
		} else {
			b := append(slices.Clone(r.b), make([]byte, 4-len(r.b))...)
			rev := []byte{b[3], b[2], b[1], b[0]}
			tag := []byte{b[0] + 1, b[1] + 1, b[2] + 1, b[3] + 1}
			// VARCHAR: the bytes without the NUL padding; not UTF-8: null.
			tagText := string(bytes.TrimRight(tag, "\x00"))
			if !utf8.ValidString(tagText) {
				tagText = "(null)"
			}
			h2 := fmt.Sprintf("[%v,%v]", 2*r.h[0], 2*r.h[1])
			want = []string{fmt.Sprint(int64(r.cam)*1000000 + r.ts), fmt.Sprint(!r.on), h2, fmt.Sprint(r.x + r.x),
				string(rev), tagText}
		}
		if len(got) != len(want) {
			t.Fatalf("id %d: %d columns %v, want %d", r.id, len(got), got, len(want))
		}
		for c := range want {
			if got[c] != want[c] {
				t.Errorf("id %d column %d: %q, want %q", r.id, c, got[c], want[c])
			}
		}
	}
}

// TestTypedModelErrors: a column a model input cannot take is an error
// before anything runs, naming the model, the argument's column and type,
// and the input.
func TestTypedModelErrors(t *testing.T) {
	dir := t.TempDir()
	model := writeTypedModel(t, dir)
	writeTypedTable(t, filepath.Join(dir, "t.arrow"), typedRows(10))
	for _, tc := range []struct{ args, want string }{
		// A DOUBLE into the int32 input: it would be truncated.
		{"t.x, t.ts, t.flag, t.h, t.x, t.b", `argument 1 (column x, DOUBLE) cannot feed model input cam int32[N,1]`},
		// An INT into the bool input.
		{"t.cam, t.ts, t.cam, t.h, t.x, t.b", `argument 3 (column cam, INT) cannot feed model input on bool[N,1]`},
		// A BOOLEAN into the float16 [N,2] input.
		{"t.cam, t.ts, t.flag, t.flag, t.x, t.b", `argument 4 (column flag, BOOLEAN) cannot feed model input h float16[N,2]`},
	} {
		script := fmt.Sprintf(`
CREATE MODEL Mix OUTPUTS (id BIGINT) VARIANTS (v1 FROM '%s');
CREATE TABLE t (id BIGINT, cam INT, ts TIMESTAMP, flag BOOLEAN, h TENSOR(FLOAT, 2), x DOUBLE, b BLOB) FROM FILE '%s' FORMAT ARROW;
SELECT t.id, m.key FROM t CROSS JOIN LATERAL Mix(%s) AS m(key);
`, model, filepath.Join(dir, "t.arrow"), tc.args)
		_, err := runTypedScript(t, dir, script, memory.NewGoAllocator())
		if !errors.Is(err, ErrModel) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Mix") {
			t.Errorf("Mix(%s): %v\nwant %q", tc.args, err, tc.want)
		}
	}
	// An output the column's type cannot take.
	script := fmt.Sprintf(`
CREATE MODEL Mix OUTPUTS (id BOOLEAN) VARIANTS (v1 FROM '%s');
CREATE TABLE t (id BIGINT, cam INT, ts TIMESTAMP, flag BOOLEAN, h TENSOR(FLOAT, 2), x DOUBLE, b BLOB) FROM FILE '%s' FORMAT ARROW;
SELECT t.id, m.key FROM t CROSS JOIN LATERAL Mix(t.cam, t.ts, t.flag, t.h, t.x, t.b) AS m(key);
`, model, filepath.Join(dir, "t.arrow"))
	_, err := runTypedScript(t, dir, script, memory.NewGoAllocator())
	if !errors.Is(err, ErrModel) || !strings.Contains(err.Error(), "output id int64[N,1] cannot give column key (BOOLEAN)") {
		t.Errorf("int64 output into a BOOLEAN: %v", err)
	}
}

// TestCheckModelArgsLeavesTypedInputs: the binder's check of tensor
// arguments against model files (a cluster run's) passes a float tensor
// feeding a float16 input to the typed rule, as the run binds it, instead
// of refusing it for not being float32.
func TestCheckModelArgsLeavesTypedInputs(t *testing.T) {
	dir := t.TempDir()
	n := modelzoo.Dim{Param: "N"}
	g := &modelzoo.Graph{
		Name:    "half",
		Inputs:  []modelzoo.ValueInfo{{Name: "h", Shape: []modelzoo.Dim{n, {Value: 2}}, Elem: modelzoo.Float16}},
		Outputs: []modelzoo.ValueInfo{{Name: "f", Shape: []modelzoo.Dim{n, {Value: 2}}}},
		Nodes: []modelzoo.Node{{OpType: "Cast", Name: "f", Inputs: []string{"h"}, Outputs: []string{"f"},
			Attrs: []modelzoo.Attr{modelzoo.IntAttr("to", int64(modelzoo.Float))}}},
	}
	if err := g.WriteFile(filepath.Join(dir, "half.onnx")); err != nil {
		t.Fatal(err)
	}
	m := &catalog.Model{Name: "Half", Variants: []*catalog.Variant{{Name: "v1", File: filepath.Join(dir, "half.onnx")}}}
	rt := New(Config{})
	if i, err := rt.CheckModelArgs(m, []arrow.DataType{arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32)}); err != nil || i != -1 {
		t.Fatalf("a float tensor for a float16 input: argument %d, %v; want it left to the typed rule", i, err)
	}
}
