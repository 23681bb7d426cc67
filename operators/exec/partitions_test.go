package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/operators/sources"
)

// Each file of a glob stream is a partition with its own watermark: two
// files that each cover the same 20 seconds lose no row as late, where the
// same rows in one file, one file's after the other's, would leave the
// second's behind the first's watermark.
func TestGlobStreamPartitionsKeepTheirOwnWatermark(t *testing.T) {
	dir := t.TempDir()
	for k := 0; k < 2; k++ {
		var b strings.Builder
		b.WriteString("k,ts\n")
		for s := 0; s < 20; s++ {
			fmt.Fprintf(&b, "%d,2026-01-01 00:00:%02d\n", k, s)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%d.csv", k)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(from string) [][]any {
		t.Helper()
		out := &collect{}
		err := RunScript(context.Background(), filepath.Join(dir, "q.sql"),
			"CREATE STREAM s (k BIGINT, ts TIMESTAMP) FROM FILE '"+from+"' FORMAT CSV;\n"+
				"SELECT k, count(*) AS n, window_start FROM s GROUP BY k, TUMBLE(ts, INTERVAL '5' SECOND);",
			ScriptOptions{Options: Options{BaseDir: dir, MaxDelay: 1e9}, NewOutput: func() (sinks.Writer, error) { return out, nil }})
		if err != nil {
			t.Fatal(err)
		}
		sortRows(out.rows)
		return out.rows
	}
	rows := run("part-*.csv") // relative to the script, as a file name is
	if len(rows) != 8 {
		t.Fatalf("%d windows, want 4 per partition: %v", len(rows), rows)
	}
	for _, r := range rows {
		if r[1] != int64(5) {
			t.Fatalf("window %v: want 5 rows in each (none late)", r)
		}
	}
	// The same rows as one stream: the second file's are late.
	one, _ := os.ReadFile(filepath.Join(dir, "part-0.csv"))
	two, _ := os.ReadFile(filepath.Join(dir, "part-1.csv"))
	both := string(one) + strings.TrimPrefix(string(two), "k,ts\n")
	if err := os.WriteFile(filepath.Join(dir, "both.csv"), []byte(both), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := len(run("both.csv")); n >= 8 {
		t.Fatalf("one file of both: %d windows; the second half should have been late", n)
	}
}

func TestGlobStreamThatMatchesNothing(t *testing.T) {
	dir := t.TempDir()
	err := RunScript(context.Background(), filepath.Join(dir, "q.sql"),
		"CREATE STREAM s (k BIGINT, ts TIMESTAMP) FROM FILE 'none-*.csv' FORMAT CSV;\nSELECT k FROM s;",
		ScriptOptions{Options: Options{BaseDir: dir}, NewOutput: func() (sinks.Writer, error) { return &collect{}, nil }})
	if !errors.Is(err, sources.ErrBadFile) || !strings.Contains(err.Error(), `no file matches "none-*.csv"`) || !strings.Contains(err.Error(), "q.sql:2:") {
		t.Fatalf("err = %v, want a bad file naming the pattern at its position", err)
	}
}
