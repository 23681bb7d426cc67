package sources

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
	"github.com/tierflow/tierflow/operators/functions"
)

var declared = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

const csvText = `id,name,ts,score
1,a,2024-01-01 00:00:01,1.5
2,b,2024-01-01T00:00:02Z,2.5
x,c,2024-01-01 00:00:03,3.5
4,,2024-01-01 00:00:04,
5,e,2024-01-01 00:00:05,4.5
`

func write(t *testing.T, name, text string) string {
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readAll(t *testing.T, mem memory.Allocator, r Reader) [][]any {
	t.Helper()
	var rows [][]any
	for {
		rec, err := r.Next(mem)
		if err != nil {
			t.Fatal(err)
		}
		if rec == nil {
			break
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			row := make([]any, rec.NumCols())
			for j := range row {
				row[j] = functions.ValueAt(rec.Column(j), i)
			}
			rows = append(rows, row)
		}
		rec.Release()
	}
	return rows
}

func TestCSVBadRowsSkipOrFail(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	path := write(t, "in.csv", csvText)
	rep := &Report{}
	r, err := OpenCSV(path, declared, 2, Skip, rep)
	if err != nil {
		t.Fatal(err)
	}
	rows := readAll(t, mem, r)
	r.Close()
	// Unquoted empty fields are NULL in every type (TestCSVEmptyFieldRule).
	if len(rows) != 4 || rows[2][0] != int64(4) || rows[2][3] != nil || rows[2][2] != nil {
		t.Fatalf("rows: %v", rows)
	}
	if rows[1][1].(time.Time).Second() != 2 {
		t.Fatalf("timestamp: %v", rows[1][1])
	}
	msgs := rep.Messages()
	if rep.BadRows.Load() != 1 || len(msgs) != 1 || !strings.Contains(msgs[0], path+":4:") || !strings.Contains(msgs[0], `"id"`) {
		t.Fatalf("report: %d %v", rep.BadRows.Load(), msgs)
	}
	r, _ = OpenCSV(path, declared, 2, Fail, nil)
	defer r.Close()
	var ferr error
	for {
		rec, err := r.Next(mem)
		if err != nil {
			ferr = err
			break
		}
		if rec == nil {
			break
		}
		rec.Release()
	}
	if !errors.Is(ferr, ErrBadRow) || !strings.Contains(ferr.Error(), ":4:") {
		t.Fatalf("fail policy: %v", ferr)
	}
	if _, err := OpenCSV(path, arrow.NewSchema([]arrow.Field{{Name: "nope", Type: arrow.BinaryTypes.String}}, nil), 2, Fail, nil); !errors.Is(err, ErrBadFile) {
		t.Fatalf("missing column: %v", err)
	}
}

func TestInferredSchemas(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r, err := OpenCSV(write(t, "in.csv", "a,b,c,d\n1,1.5,true,2024-01-01 00:00:00\n2,2,false,2024-01-02 00:00:00\n"), nil, 10, Fail, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := r.Schema()
	want := []arrow.Type{arrow.INT64, arrow.FLOAT64, arrow.BOOL, arrow.TIMESTAMP}
	for i, w := range want {
		if got.Field(i).Type.ID() != w {
			t.Errorf("csv column %d: %s", i, got.Field(i).Type)
		}
	}
	if rows := readAll(t, mem, r); len(rows) != 2 || rows[1][1] != 2.0 {
		t.Fatalf("%v", rows)
	}
	r.Close()
	j, err := OpenJSONL(write(t, "in.jsonl", `{"b": "x", "a": 1}
{"a": 2.5, "b": null}
not json
{"a": 3}
`), nil, 10, Skip, &Report{})
	if err != nil {
		t.Fatal(err)
	}
	s := j.Schema()
	if s.Field(0).Name != "b" || s.Field(1).Type.ID() != arrow.FLOAT64 || s.Field(0).Type.ID() != arrow.STRING {
		t.Fatalf("jsonl schema: %s", s)
	}
	rows := readAll(t, mem, j)
	j.Close()
	if len(rows) != 3 || rows[0][1] != 1.0 || rows[1][0] != nil || rows[2][1] != 3.0 {
		t.Fatalf("jsonl rows: %v", rows)
	}
}

func TestParquetAndIPCRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	g := &Generator{Rows: 1000, Batch: 300, Keys: 7, Start: time.Unix(1_700_000_000, 0), Step: time.Millisecond}
	var recs []arrow.Record
	for {
		rec, err := g.Next(mem)
		if err != nil {
			t.Fatal(err)
		}
		if rec == nil {
			break
		}
		recs = append(recs, rec)
	}
	dir := t.TempDir()
	pq := filepath.Join(dir, "x.parquet")
	f, _ := os.Create(pq)
	w, err := pqarrow.NewFileWriter(GeneratorSchema, f, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	ip := filepath.Join(dir, "x.arrow")
	f2, _ := os.Create(ip)
	iw, err := ipc.NewFileWriter(f2, ipc.WithSchema(GeneratorSchema), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
		if err := iw.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	iw.Close()
	f2.Close()
	want := 0
	for _, r := range recs {
		want += int(r.NumRows())
		r.Release()
	}
	pr, err := OpenParquet(pq, nil, 256, mem, Fail, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rows := readAll(t, mem, pr); len(rows) != want || rows[999][0] != int64(999) {
		t.Fatalf("parquet: %d rows", len(rows))
	}
	pr.Close()
	ir, err := OpenIPC(ip, nil, mem, Fail, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rows := readAll(t, mem, ir); len(rows) != want {
		t.Fatalf("ipc: %d rows", len(rows))
	}
	ir.Close()
	if _, err := OpenParquet(write(t, "bad.parquet", "garbage"), nil, 10, mem, Fail, nil); !errors.Is(err, ErrBadFile) {
		t.Fatalf("corrupt parquet: %v", err)
	}
	if _, err := OpenIPC(write(t, "bad.arrow", "garbage"), nil, mem, Fail, nil); !errors.Is(err, ErrBadFile) {
		t.Fatalf("corrupt ipc: %v", err)
	}
	_ = array.NewInt64Builder
}

// TestSourceEpochsFollowTheWatermark runs a source in a dataflow: every batch is
// sent at the watermark of the batches before it.
func TestSourceEpochsFollowTheWatermark(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	start := time.Unix(1_700_000_000, 0)
	g := &Generator{Rows: 1000, Batch: 100, Keys: 3, Start: start, Step: time.Millisecond}
	graph := &dataflow.Graph{Query: "s"}
	src := graph.AddOperator(dataflow.OperatorSpec{Name: "gen", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
		return NewSource(g, EventTime{Column: 3, MaxDelay: 20 * time.Millisecond}, nil), nil
	}})
	capt := &builtin.Captured{}
	sink := graph.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, New: func(in dataflow.Instance) (dataflow.Operator, error) { return builtin.NewCapture(capt, in.Index), nil }})
	graph.Connect(src, 0, sink, 0)
	ws, err := dataflow.BuildLocal(graph, dataflow.Config{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := dataflow.StepUntilDone(ws, 100000); err != nil {
		t.Fatal(err)
	}
	defer capt.Release()
	bs := capt.Batches()
	if len(bs) != 10 || bs[0].Epoch != 0 {
		t.Fatalf("%d batches, first at %d", len(bs), bs[0].Epoch)
	}
	for i := 1; i < len(bs); i++ {
		want := start.Add(time.Duration(i*100-1)*time.Millisecond - 20*time.Millisecond).UnixMicro()
		if int64(bs[i].Epoch) != want {
			t.Fatalf("batch %d at %d, want %d", i, bs[i].Epoch, want)
		}
	}
}

// A bad row's message quotes its value, and a field may be megabytes: the
// messages a report keeps (which travel in a worker's status message) are
// each cut to maxMessageText, keeping where the row is and why.
func TestBadRowMessagesAreBounded(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	path := write(t, "in.csv", "id,v\n1,5\n2,"+strings.Repeat("x", 3<<20)+"\n3,7\n")
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rep := &Report{}
	r, err := OpenCSV(path, schema, 2, Skip, rep)
	if err != nil {
		t.Fatal(err)
	}
	rows := readAll(t, mem, r)
	r.Close()
	msgs := rep.Messages()
	if len(rows) != 2 || len(msgs) != 1 {
		t.Fatalf("rows %v, messages %d", rows, len(msgs))
	}
	if len(msgs[0]) > maxMessageText || !strings.Contains(msgs[0], path+":3:") || !strings.Contains(msgs[0], `"v"`) {
		t.Errorf("%d bytes: %.200q, want the row's place and column within %d", len(msgs[0]), msgs[0], maxMessageText)
	}
}
