package benchtest_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/bench/operators"
)

var runOperators = runner(operators.Command)

func TestBenchOperatorsPrintsJSONRows(t *testing.T) {
	var out, errb bytes.Buffer
	code := runOperators([]string{"bench", "operators", "--rows", "20000", "--batch", "4096", "--repeats", "1", "--format", "json"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rows []map[string]any
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(rows) != 5 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if r["engine_rows_per_s"].(float64) <= 0 || r["overhead"].(float64) <= 0 {
			t.Fatalf("%v", r)
		}
	}
}

// TestBenchOperatorsEveryCaseRunsWithoutLeaks: each case measures both sides
// on the same batches and returns every buffer it took.
func TestBenchOperatorsEveryCaseRunsWithoutLeaks(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cfg := operators.Config{Rows: 20_000, Batch: 4096, Keys: 50, Repeats: 1}
	batches, err := operators.Batches(mem, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	names := map[string]bool{}
	for _, c := range operators.Cases() {
		r, err := operators.Measure(c, mem, cfg, batches)
		if err != nil {
			t.Fatal(err)
		}
		if r.Rows != cfg.Rows || r.EngineRowsS <= 0 || r.BaselineRows <= 0 || r.Overhead <= 0 {
			t.Fatalf("%+v", r)
		}
		names[strings.Fields(r.Benchmark)[0]] = true
	}
	for _, want := range []string{"filter", "project", "hash", "pipeline:"} {
		if !names[want] {
			t.Errorf("no %s benchmark", want)
		}
	}
}

// BenchmarkOperators runs each case's engine and baseline on the same
// batches; compare the rows/s metrics of the two sub-benchmarks
// (go test -run X -bench Operators ./bench/benchtest).
func BenchmarkOperators(b *testing.B) {
	mem := memory.NewGoAllocator()
	cfg := operators.DefaultConfig()
	cfg.Rows = 1 << 20
	batches, err := operators.Batches(mem, cfg)
	if err != nil {
		b.Fatal(err)
	}
	var rows int64
	for _, r := range batches {
		rows += r.NumRows()
	}
	for _, c := range operators.Cases() {
		b.Run(c.Name+"/engine", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if c.Whole != nil {
					if err := c.Whole(mem, cfg, batches); err != nil {
						b.Fatal(err)
					}
					continue
				}
				eng, _, done, err := c.Setup(mem, cfg)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range batches {
					if err := eng(r); err != nil {
						b.Fatal(err)
					}
				}
				done()
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
		b.Run(c.Name+"/baseline", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				_, base, done, err := c.Setup(mem, cfg)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range batches {
					if err := base(r); err != nil {
						b.Fatal(err)
					}
				}
				done()
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
