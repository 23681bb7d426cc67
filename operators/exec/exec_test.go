package exec

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// collect is a Writer that keeps rows as Go values.
type collect struct{ rows [][]any }

func (c *collect) Write(rec arrow.Record) error {
	for i := 0; i < int(rec.NumRows()); i++ {
		row := make([]any, rec.NumCols())
		for j := range row {
			row[j] = functions.ValueAt(rec.Column(j), i)
		}
		c.rows = append(c.rows, row)
	}
	return nil
}
func (c *collect) Close() error { return nil }

func readCSV(t *testing.T, path string) [][]string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows[1:]
}

// examplePlan builds, by hand, the logical plan of examples/streaming/query.sql
// (what the binder produces for it), so the executor is tested independently of
// the binder.
func examplePlan(t *testing.T, dir string) *logical.Plan {
	reg := expr.Builtins()
	stream := &catalog.Stream{Name: "readings", Source: "file", Subject: filepath.Join(dir, "readings.csv"), Format: "csv",
		Columns: []catalog.Column{{Name: "sensor", Type: "INT"}, {Name: "ts", Type: "TIMESTAMP"}, {Name: "temperature", Type: "DOUBLE"}, {Name: "humidity", Type: "DOUBLE"}}}
	table := &catalog.Table{Name: "sensors", Path: filepath.Join(dir, "sensors.csv"), Format: "csv",
		Columns: []catalog.Column{{Name: "sensor", Type: "INT"}, {Name: "site", Type: "VARCHAR"}}}
	r, err := logical.NewScan(stream, nil, "r", nil, logical.Pos{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := logical.NewScan(nil, table, "s", nil, logical.Pos{})
	if err != nil {
		t.Fatal(err)
	}
	i32 := arrow.PrimitiveTypes.Int32
	col := func(i int, name string, dt arrow.DataType) *expr.Column {
		return &expr.Column{Index: i, Name: name, DataType: dt}
	}
	lit := func(v any) expr.Expr { l, _ := expr.NewLiteral(v); return l }
	between, _ := expr.NewBetween(col(2, "temperature", expr.Float64), lit(int64(-40)), lit(int64(60)), false)
	filtered := &logical.Filter{Input: r, Pred: between}
	on, _ := reg.NewCall("equal", col(0, "sensor", i32), col(4, "sensor", i32))
	join := logical.NewJoin(logical.InnerJoin, filtered, s, on, logical.Pos{})
	n, _ := reg.NewAggregate("count", false)
	avg, _ := reg.NewAggregate("avg", false, col(2, "temperature", expr.Float64))
	mx, _ := reg.NewAggregate("max", false, col(3, "humidity", expr.Float64))
	win := &logical.Window{Kind: logical.Tumble, Time: col(1, "ts", expr.Timestamp), Size: 10 * time.Second}
	agg := logical.NewAggregate(join, []expr.Expr{col(5, "site", expr.String)}, []string{"site"}, win,
		[]*expr.Aggregate{n, avg, mx}, []string{"agg0", "agg1", "agg2"}, logical.Pos{})
	rounded, _ := reg.NewCall("round", col(4, "agg1", expr.Float64), lit(int64(2)))
	proj := logical.NewProject(agg, []expr.Expr{col(0, "site", expr.String), col(1, "window_start", expr.Timestamp), col(2, "window_end", expr.Timestamp),
		col(3, "agg0", expr.Int64), rounded, col(5, "agg2", expr.Float64)},
		[]string{"site", "window_start", "window_end", "readings", "avg_temp", "max_humidity"}, logical.Pos{})
	return &logical.Plan{Root: &logical.Sink{Input: proj}}
}

// TestStreamingExampleMatchesReference runs the plan of the streaming example
// and recomputes its answer from the CSV files with plain Go.
func TestStreamingExampleMatchesReference(t *testing.T) {
	for _, par := range []int{1, 3} {
		testStreamingExample(t, par)
	}
}

func testStreamingExample(t *testing.T, parallelism int) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := filepath.Join("..", "..", "examples", "streaming")
	out := &collect{}
	q, err := Build(examplePlan(t, dir), Options{Allocator: mem, MaxDelay: time.Second, BatchSize: 100, Output: out, Parallelism: parallelism})
	if err != nil {
		t.Fatal(err)
	}
	st, err := q.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.RowsRead != 1200+6 || st.LateRows != 0 || st.RowsWritten != int64(len(out.rows)) {
		t.Fatalf("stats %+v", st)
	}
	if parallelism > 1 {
		n := 0
		for _, op := range q.Graph().Operators {
			if op.Name == "aggregate" {
				n = op.Parallelism()
			}
		}
		if n != parallelism {
			t.Fatalf("aggregate runs %d instances, want %d", n, parallelism)
		}
	}
	checkExample(t, dir, out.rows)
}

// checkExample recomputes the streaming example's answer from its CSV files
// with plain Go and compares, also checking that windows come out in order.
func checkExample(t *testing.T, dir string, rows [][]any) {
	t.Helper()
	site := map[string]string{}
	for _, r := range readCSV(t, filepath.Join(dir, "sensors.csv")) {
		site[r[0]] = r[1]
	}
	type agg struct {
		n         int64
		sum, maxH float64
	}
	ref := map[string]*agg{}
	for _, r := range readCSV(t, filepath.Join(dir, "readings.csv")) {
		ts, _ := time.Parse("2006-01-02 15:04:05.000", r[1])
		temp, _ := strconv.ParseFloat(r[2], 64)
		hum, _ := strconv.ParseFloat(r[3], 64)
		if temp < -40 || temp > 60 {
			continue
		}
		w := ts.Truncate(10 * time.Second)
		key := site[r[0]] + "|" + w.Format(time.RFC3339)
		a := ref[key]
		if a == nil {
			a = &agg{maxH: math.Inf(-1)}
			ref[key] = a
		}
		a.n++
		a.sum += temp
		a.maxH = max(a.maxH, hum)
	}
	if len(rows) != len(ref) {
		t.Fatalf("%d result rows, reference has %d", len(rows), len(ref))
	}
	var lastEnd time.Time
	for _, r := range rows {
		key := r[0].(string) + "|" + r[1].(time.Time).Format(time.RFC3339)
		a := ref[key]
		if a == nil {
			t.Fatalf("unexpected group %s", key)
		}
		if r[2].(time.Time).Sub(r[1].(time.Time)) != 10*time.Second || r[3] != a.n ||
			math.Abs(r[4].(float64)-math.Round(a.sum/float64(a.n)*100)/100) > 1e-9 || r[5] != a.maxH {
			t.Errorf("group %s: got %v, want n=%d avg=%.2f max=%v", key, r, a.n, a.sum/float64(a.n), a.maxH)
		}
		if r[2].(time.Time).Before(lastEnd) {
			t.Fatalf("windows out of order: %v after %v", r[2], lastEnd)
		}
		lastEnd = r[2].(time.Time)
	}
}

// TestExampleScriptThroughTheBinder runs examples/streaming/query.sql as
// `tierflow run` does: parse, bind, build, run.
func TestExampleScriptThroughTheBinder(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := filepath.Join("..", "..", "examples", "streaming")
	src, err := os.ReadFile(filepath.Join(dir, "query.sql"))
	if err != nil {
		t.Fatal(err)
	}
	out := &collect{}
	var log bytes.Buffer
	err = RunScript(context.Background(), filepath.Join(dir, "query.sql"), string(src), ScriptOptions{
		Options:   Options{Allocator: mem, MaxDelay: 2 * time.Second},
		NewOutput: func() (sinks.Writer, error) { return out, nil },
		Log:       &log,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "1206 rows read") || strings.Contains(log.String(), "late") {
		t.Fatalf("log: %s", log.String())
	}
	checkExample(t, dir, out.rows)
}

// TestWindowJoinScript joins two streams per TUMBLE window through the binder
// and checks the pairs against a nested loop over the files.
func TestWindowJoinScript(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	type row struct {
		k  int
		ts time.Time
	}
	var a, b []row
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var sa, sb strings.Builder
	sa.WriteString("k,ts\n")
	sb.WriteString("k,ts\n")
	for i := 0; i < 300; i++ {
		r := row{i % 7, base.Add(time.Duration(i) * 170 * time.Millisecond)}
		a = append(a, r)
		sa.WriteString(strconv.Itoa(r.k) + "," + r.ts.Format("2006-01-02 15:04:05.000") + "\n")
		if i%2 == 0 {
			r2 := row{i % 5, base.Add(time.Duration(i) * 190 * time.Millisecond)}
			b = append(b, r2)
			sb.WriteString(strconv.Itoa(r2.k) + "," + r2.ts.Format("2006-01-02 15:04:05.000") + "\n")
		}
	}
	os.WriteFile(filepath.Join(dir, "a.csv"), []byte(sa.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "b.csv"), []byte(sb.String()), 0o644)
	sql := `CREATE STREAM a (k BIGINT, ts TIMESTAMP) FROM FILE 'a.csv' FORMAT CSV;
CREATE STREAM b (k BIGINT, ts TIMESTAMP) FROM FILE 'b.csv' FORMAT CSV;
SELECT a.k, a.ts, b.ts AS bts FROM a JOIN b ON a.k = b.k AND TUMBLE(a.ts, INTERVAL '5' SECOND) = TUMBLE(b.ts, INTERVAL '5' SECOND);`
	out := &collect{}
	err := RunScript(context.Background(), filepath.Join(dir, "q.sql"), sql, ScriptOptions{
		Options:   Options{Allocator: mem, BatchSize: 16},
		NewOutput: func() (sinks.Writer, error) { return out, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, x := range a {
		for _, y := range b {
			if x.k == y.k && x.ts.Truncate(5*time.Second).Equal(y.ts.Truncate(5*time.Second)) {
				want[strconv.Itoa(x.k)+x.ts.String()+y.ts.String()]++
			}
		}
	}
	got := map[string]int{}
	for _, r := range out.rows {
		got[strconv.FormatInt(r[0].(int64), 10)+r[1].(time.Time).String()+r[2].(time.Time).String()]++
	}
	if len(want) < 50 || !reflect.DeepEqual(got, want) {
		t.Fatalf("window join: %d distinct pairs, want %d", len(got), len(want))
	}
}

func TestScriptErrors(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d.csv")
	os.WriteFile(data, []byte("a,b\n1,x\noops,y\n3,z\n"), 0o644)
	run := func(sql string, onErr sources.OnError) (*collect, string, error) {
		out := &collect{}
		var log bytes.Buffer
		err := RunScript(context.Background(), filepath.Join(dir, "q.sql"), sql, ScriptOptions{
			Options:   Options{OnError: onErr},
			NewOutput: func() (sinks.Writer, error) { return out, nil },
			Log:       &log,
		})
		return out, log.String(), err
	}
	const create = "CREATE TABLE d (a BIGINT, b VARCHAR) FROM FILE 'd.csv' FORMAT CSV;\n"
	out, log, err := run(create+"SELECT b, a * 2 AS a2 FROM d WHERE a > 0;", sources.Skip)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.rows) != 2 || out.rows[1][1] != int64(6) || !strings.Contains(log, "1 malformed") || !strings.Contains(log, "d.csv:3:") {
		t.Fatalf("skip: %v\n%s", out.rows, log)
	}
	if _, _, err := run(create+"SELECT a FROM d;", sources.Fail); !errors.Is(err, sources.ErrBadRow) || !strings.Contains(err.Error(), "d.csv:3:") {
		t.Fatalf("fail: %v", err)
	}
	if _, _, err := run("SELECT nope FROM missing;", sources.Fail); err == nil || !strings.Contains(err.Error(), "q.sql:1:") {
		t.Fatalf("bind error: %v", err)
	}
}
