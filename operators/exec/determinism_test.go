package exec

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/sinks"
)

// determinismData writes a stream of n bids a few seconds out of order
// (within and beyond the watermark's delay), seeded: the same file every
// run.
func determinismData(t *testing.T, dir string, n int) {
	t.Helper()
	r := rand.New(rand.NewSource(29))
	var b strings.Builder
	b.WriteString("auction,price,ts\n")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		// 40 ms apart, up to 3 s early: some rows fall behind a 1 s
		// watermark delay, so which rows are late matters.
		at := t0.Add(time.Duration(i)*40*time.Millisecond - time.Duration(r.Intn(3000))*time.Millisecond)
		fmt.Fprintf(&b, "%d,%d,%s\n", r.Intn(20), r.Intn(1000), at.Format("2006-01-02 15:04:05.000"))
	}
	if err := os.WriteFile(filepath.Join(dir, "bids.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runRows runs sql over dir's files and returns its rows as sorted text,
// with the run's summary (rows, late rows).
func runRows(t *testing.T, dir, sql string, o Options) ([]string, string) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	o.Allocator = mem
	out := &collect{}
	var log strings.Builder
	err := RunScript(context.Background(), filepath.Join(dir, "q.sql"), sql, ScriptOptions{
		Options:   o,
		NewOutput: func() (sinks.Writer, error) { return out, nil },
		Log:       &log,
	})
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]string, len(out.rows))
	for i, r := range out.rows {
		rows[i] = fmt.Sprint(r...)
	}
	sort.Strings(rows)
	return rows, log.String()
}

// A window over an upstream window's output answers the same whatever the
// batch sizes, the parallelism and the scheduling: which rows are late
// follows from event time and the watermark alone (docs/language.md, "Event
// time"). HOP then TUMBLE over the upstream window_start gave 54, 52, 50,
// 54, 45, 54 rows run to run (#29).
func TestCascadedWindowsAnswerTheSameEveryRun(t *testing.T) {
	dir := t.TempDir()
	determinismData(t, dir, 3000)
	const create = "CREATE STREAM bids (auction BIGINT, price BIGINT, ts TIMESTAMP) FROM FILE 'bids.csv' FORMAT CSV;\n"
	queries := map[string]string{
		"hop then tumble on window_start": `SELECT window_start, window_end, max(n) AS top, count(*) AS c FROM (
  SELECT auction, count(*) AS n, window_start AS ws FROM bids GROUP BY auction, HOP(ts, INTERVAL '10' SECOND, INTERVAL '2' SECOND)
) GROUP BY TUMBLE(ws, INTERVAL '10' SECOND);`,
		"tumble then tumble on window_end": `SELECT window_start, sum(s) AS total, count(*) AS c FROM (
  SELECT auction, sum(price) AS s, window_end FROM bids GROUP BY auction, TUMBLE(ts, INTERVAL '5' SECOND)
) GROUP BY TUMBLE(window_end, INTERVAL '15' SECOND);`,
		"tumble then hop on window_time": `SELECT window_start, window_end, count(*) AS c, sum(n) AS total FROM (
  SELECT auction, count(*) AS n, window_time FROM bids GROUP BY auction, TUMBLE(ts, INTERVAL '4' SECOND)
) GROUP BY HOP(window_time, INTERVAL '8' SECOND, INTERVAL '4' SECOND);`,
		"tumble": `SELECT auction, window_start, count(*) AS c, max(price) AS m FROM bids GROUP BY auction, TUMBLE(ts, INTERVAL '3' SECOND);`,
	}
	runs := []Options{
		{BatchSize: 1000, MaxDelay: time.Second},
		{BatchSize: 7, MaxDelay: time.Second},
		{BatchSize: 64, MaxDelay: time.Second, Parallelism: 3},
		{BatchSize: 333, MaxDelay: time.Second, Parallelism: 2},
		{BatchSize: 3, MaxDelay: time.Second},
	}
	for name, q := range queries {
		t.Run(name, func(t *testing.T) {
			var want []string
			for i, o := range runs {
				got, log := runRows(t, dir, create+q, o)
				if len(got) == 0 {
					t.Fatalf("run %d: no rows (%s)", i, log)
				}
				if i == 0 {
					want = got
					continue
				}
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Fatalf("run %d (batch %d, parallelism %d): %d rows, run 0 had %d\n%s\nfirst difference: %s", i, o.BatchSize, o.Parallelism, len(got), len(want), log, firstDiff(got, want))
				}
			}
		})
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] + " vs " + b[i]
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(a), len(b))
}
