package exec

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/rel"
	"github.com/tierflow/tierflow/operators/sinks"
)

// TestStreamOverScript runs Flink's OVER aggregation on a file stream with
// out-of-order rows: a row within the allowed delay is placed by its time, a
// row behind the watermark is dropped and reported as late.
func TestStreamOverScript(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	csv := "k,v,ts\n" +
		"1,1,2024-01-01 00:00:00\n" +
		"1,2,2024-01-01 00:00:03\n" +
		"2,5,2024-01-01 00:00:04\n" +
		"1,4,2024-01-01 00:00:02\n" + // out of order, within the 5 s delay
		"1,8,2024-01-01 00:00:20\n" + // the watermark moves to 00:00:15
		"1,16,2024-01-01 00:00:09\n" // behind it: late
	if err := os.WriteFile(filepath.Join(dir, "ev.csv"), []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	sql := `CREATE STREAM ev (k BIGINT, v BIGINT, ts TIMESTAMP) FROM FILE 'ev.csv' FORMAT CSV;
SELECT k, v, sum(v) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW) AS s,
  count(*) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS c2,
  sum(v) OVER (PARTITION BY k ORDER BY ts) AS total
FROM ev;`
	out := &collect{}
	var log bytes.Buffer
	err := RunScript(context.Background(), filepath.Join(dir, "q.sql"), sql, ScriptOptions{
		Options:   Options{Allocator: mem, BatchSize: 1, MaxDelay: 5 * time.Second},
		NewOutput: func() (sinks.Writer, error) { return out, nil },
		Log:       &log,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{
		{int64(1), int64(1), int64(1), int64(1), int64(1)},
		{int64(1), int64(4), int64(5), int64(2), int64(5)},
		{int64(1), int64(2), int64(7), int64(2), int64(7)},
		{int64(2), int64(5), int64(5), int64(1), int64(5)},
		{int64(1), int64(8), int64(8), int64(2), int64(15)},
	}
	sortRows := func(rs [][]any) {
		key := func(r []any) int64 { return r[0].(int64)*1000 + r[1].(int64) }
		for i := range rs {
			for j := i + 1; j < len(rs); j++ {
				if key(rs[j]) < key(rs[i]) {
					rs[i], rs[j] = rs[j], rs[i]
				}
			}
		}
	}
	sortRows(want)
	sortRows(out.rows)
	if !reflect.DeepEqual(out.rows, want) {
		t.Fatalf("got %v\nwant %v", out.rows, want)
	}
	if !strings.Contains(log.String(), "late") || !strings.Contains(log.String(), "1 late") && !strings.Contains(log.String(), "late 1") && !strings.Contains(log.String(), "late: 1") {
		t.Fatalf("the late row is not reported: %s", log.String())
	}
}

// TestStreamWindowErrorsAtTheCall: what a stream cannot evaluate row by row
// is an error at the call, before anything runs.
func TestStreamWindowErrorsAtTheCall(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ev.csv"), []byte("k,v,ts\n1,1,2024-01-01 00:00:00\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ sel, at string }{
		{"SELECT k, rank() OVER (PARTITION BY k ORDER BY ts) FROM ev", "q.sql:2:11:"},
		{"SELECT k,\n  sum(v) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING) FROM ev", "q.sql:3:3:"},
		{"SELECT sum(v) OVER (ORDER BY v ROWS 2 PRECEDING) FROM ev", "q.sql:2:8:"},
	} {
		sql := "CREATE STREAM ev (k BIGINT, v BIGINT, ts TIMESTAMP) FROM FILE 'ev.csv' FORMAT CSV;\n" + tc.sel + ";"
		err := RunScript(context.Background(), filepath.Join(dir, "q.sql"), sql, ScriptOptions{
			NewOutput: func() (sinks.Writer, error) { return &collect{}, nil },
		})
		if !errors.Is(err, rel.ErrStreamOver) || !errors.Is(err, ErrUnsupported) || !strings.HasPrefix(err.Error(), filepath.Join(dir, tc.at)) {
			t.Errorf("%s: want ErrStreamOver at %s, got %v", tc.sel, tc.at, err)
		}
	}
}

// TestWindowHugeOffsets: offsets past any partition (up to the largest
// BIGINT) give NULL, the default or the whole partition, never an overflow.
func TestWindowHugeOffsets(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t.csv"), []byte("id,v\n1,10\n2,20\n3,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const huge = "9223372036854775807"
	sql := `CREATE TABLE t (id BIGINT, v BIGINT) FROM FILE 't.csv' FORMAT CSV;
SELECT id, nth_value(v, ` + huge + `) OVER (ORDER BY id), lead(v, ` + huge + `, 0) OVER (ORDER BY id), lag(v, ` + huge + `) OVER (ORDER BY id),
  ntile(` + huge + `) OVER (ORDER BY id), sum(v) OVER (ORDER BY id ROWS BETWEEN ` + huge + ` PRECEDING AND ` + huge + ` FOLLOWING)
FROM t ORDER BY id;`
	out := &collect{}
	if err := RunScript(context.Background(), filepath.Join(dir, "q.sql"), sql, ScriptOptions{
		Options:   Options{Allocator: mem},
		NewOutput: func() (sinks.Writer, error) { return out, nil },
	}); err != nil {
		t.Fatal(err)
	}
	want := [][]any{
		{int64(1), nil, int64(0), nil, int64(1), int64(30)},
		{int64(2), nil, int64(0), nil, int64(2), int64(30)},
		{int64(3), nil, int64(0), nil, int64(3), int64(30)},
	}
	if !reflect.DeepEqual(out.rows, want) {
		t.Fatalf("got %v\nwant %v", out.rows, want)
	}
}
