package rel

import (
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

var streamSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: expr.Int64, Nullable: true},
	{Name: "v", Type: expr.Int64, Nullable: true},
	{Name: "f", Type: expr.Float64, Nullable: true},
	{Name: "s", Type: expr.String, Nullable: true},
	{Name: "ts", Type: expr.Timestamp, Nullable: true},
}, nil)

var (
	colK  = &expr.Column{Index: 0, Name: "k", DataType: expr.Int64}
	colV  = &expr.Column{Index: 1, Name: "v", DataType: expr.Int64}
	colF  = &expr.Column{Index: 2, Name: "f", DataType: expr.Float64}
	colS  = &expr.Column{Index: 3, Name: "s", DataType: expr.String}
	colTS = &expr.Column{Index: 4, Name: "ts", DataType: expr.Timestamp}
)

const t0 = int64(1_700_000_000_000_000) // event times in µs

// streamRows makes n rows whose event times advance ~10 ms a row with disorder
// of at most maxDelay, in batches of batch rows, and the epoch (watermark) each
// batch is sent at, computed as a source does: max seen so far minus maxDelay.
func streamRows(rng *rand.Rand, n, batch int, maxDelay int64) (rows [][]any, batches [][][]any, epochs []int64) {
	words := []string{"a", "b", "c", "d"}
	maxSeen := int64(math.MinInt64)
	wm := int64(0)
	for i := 0; i < n; i++ {
		ts := t0 + int64(i)*10_000 - rng.Int63n(maxDelay+1)
		r := []any{int64(rng.Intn(5)), int64(rng.Intn(100) - 20), float64(rng.Intn(1000)) / 4, words[rng.Intn(4)], time.UnixMicro(ts).UTC()}
		for j := 0; j < 4; j++ {
			if rng.Intn(10) == 0 {
				r[j] = nil
			}
		}
		rows = append(rows, r)
		if i%batch == 0 {
			batches = append(batches, nil)
			epochs = append(epochs, wm)
		}
		batches[len(batches)-1] = append(batches[len(batches)-1], r)
		maxSeen = max(maxSeen, ts)
		if (i+1)%batch == 0 {
			wm = max(wm, maxSeen-maxDelay)
		}
	}
	return
}

func makeRecord(t testing.TB, mem memory.Allocator, schema *arrow.Schema, rows [][]any) arrow.Record {
	cols := make([]arrow.Array, schema.NumFields())
	for j, f := range schema.Fields() {
		vals := make([]any, len(rows))
		for i, r := range rows {
			vals[i] = r[j]
		}
		a, err := functions.ArrayOf(mem, f.Type, vals)
		if err != nil {
			t.Fatal(err)
		}
		cols[j] = a
	}
	rec := array.NewRecord(schema, cols, int64(len(rows)))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// recordRows turns records into rows of Go values.
func recordRows(recs []arrow.Record) [][]any {
	var out [][]any
	for _, r := range recs {
		for i := 0; i < int(r.NumRows()); i++ {
			row := make([]any, r.NumCols())
			for j := range row {
				row[j] = functions.ValueAt(r.Column(j), i)
			}
			out = append(out, row)
		}
	}
	return out
}

func rowKey(r []any) string {
	parts := make([]string, len(r))
	for i, v := range r {
		switch x := v.(type) {
		case float64:
			parts[i] = fmt.Sprintf("%.6f", x)
		case time.Time:
			parts[i] = fmt.Sprint(x.UnixMicro())
		default:
			parts[i] = fmt.Sprint(v)
		}
	}
	return strings.Join(parts, "|")
}

// sameRows compares two row multisets, order-insensitively.
func sameRows(t *testing.T, what string, got, want [][]any) {
	t.Helper()
	g := make([]string, len(got))
	for i, r := range got {
		g[i] = rowKey(r)
	}
	w := make([]string, len(want))
	for i, r := range want {
		w[i] = rowKey(r)
	}
	sort.Strings(g)
	sort.Strings(w)
	if !reflect.DeepEqual(g, w) {
		n := 0
		for i := 0; i < len(g) || i < len(w); i++ {
			var a, b string
			if i < len(g) {
				a = g[i]
			}
			if i < len(w) {
				b = w[i]
			}
			if a != b && n < 5 {
				t.Errorf("%s: row %d: got %s want %s", what, i, a, b)
				n++
			}
		}
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
}

// runGraph runs source batches through the operator made by mk (one input) and
// returns the captured output, stepping the workers deterministically.
func runGraph(t testing.TB, mem memory.Allocator, batches []dataflow.Batch, parallel bool, mk func(dataflow.Instance) (dataflow.Operator, error)) (*builtin.Captured, error) {
	t.Helper()
	g := &dataflow.Graph{Query: "t"}
	src := g.AddOperator(dataflow.OperatorSpec{Name: "src", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
		return builtin.NewSliceSource(batches), nil
	}})
	op := g.AddOperator(dataflow.OperatorSpec{Name: "op", Inputs: 1, Outputs: 1, New: mk})
	capt := &builtin.Captured{}
	sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, New: func(in dataflow.Instance) (dataflow.Operator, error) {
		return builtin.NewCapture(capt, in.Index), nil
	}})
	g.Connect(src, 0, op, 0)
	g.Connect(op, 0, sink, 0)
	cfg := dataflow.Config{Allocator: mem}
	if parallel {
		return capt, dataflow.Run(t.Context(), g, cfg)
	}
	ws, err := dataflow.BuildLocal(g, cfg)
	if err != nil {
		return capt, err
	}
	return capt, dataflow.StepUntilDone(ws, 1_000_000)
}

func capturedRecords(c *builtin.Captured) []arrow.Record {
	var out []arrow.Record
	for _, b := range c.Batches() {
		out = append(out, b.Record)
	}
	return out
}

func sliceSource(in []dataflow.Batch) dataflow.Operator { return builtin.NewSliceSource(in) }
func newCaptured() *builtin.Captured                    { return &builtin.Captured{} }
func capture(c *builtin.Captured, inst int) dataflow.Operator {
	return builtin.NewCapture(c, inst)
}

// probeRows probes j with each record and returns the rows it makes.
func probeRows(t *testing.T, j *HashJoin, probe []arrow.Record) [][]any {
	t.Helper()
	var rows [][]any
	for _, rec := range probe {
		out, err := j.Probe(rec)
		if err != nil {
			t.Fatal(err)
		}
		if out != nil {
			rows = append(rows, recordRows([]arrow.Record{out})...)
			out.Release()
		}
	}
	return rows
}

// probeCount probes j with each record and counts the rows it makes (a
// benchmark's loop: nothing kept).
func probeCount(tb testing.TB, j *HashJoin, probe []arrow.Record) int {
	rows := 0
	for _, rec := range probe {
		out, err := j.Probe(rec)
		if err != nil {
			tb.Fatal(err)
		}
		if out != nil {
			rows += int(out.NumRows())
			out.Release()
		}
	}
	return rows
}
