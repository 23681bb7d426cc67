package clustertest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// AbusiveQueries are the three abusive queries of #25, in the order the
// isolation tests run them.
var AbusiveQueries = []string{"cross join", "a window per ms", "a long HOP"}

// AbusiveCases are the abusive queries a run takes: all of them, or those
// TIERFLOW_ABUSE names (comma-separated, e.g. "a window per ms"), so that
// a trace or a measurement can take one case alone.
func AbusiveCases(t testing.TB) []string {
	only := os.Getenv("TIERFLOW_ABUSE")
	if only == "" {
		return AbusiveQueries
	}
	var names []string
	for _, name := range strings.Split(only, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(AbusiveQueries, name) {
			t.Fatalf("TIERFLOW_ABUSE: %q is not one of %q", name, AbusiveQueries)
		}
		names = append(names, name)
	}
	return names
}

// WriteAbuse writes n rows (id, k, ts), ts a millisecond apart, k cycling
// over n/2 keys, and the scripts of the three abusive queries of #25 over
// them: a cross join of the table with itself, a table grouped into a
// window per millisecond (all open until the table ends), and a stream in
// a one-hour HOP every millisecond (each row in 3.6 million windows). The
// script "small" is another user's small query over a table of its own
// (1,000 rows): its latency is what the abuser could take from it.
func WriteAbuse(t testing.TB, n int) (dir string, scripts map[string]string) {
	t.Helper()
	dir = t.TempDir()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	write := func(name string, rows, keys int) string {
		var b strings.Builder
		b.WriteString("id,k,ts\n")
		for i := range rows {
			fmt.Fprintf(&b, "%d,%d,%s\n", i, i%max(1, keys), start.Add(time.Duration(i)*time.Millisecond).Format("2006-01-02 15:04:05.000"))
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	path := write("events.csv", n, n/2)
	smallPath := write("small.csv", 1000, 10)
	table := "CREATE TABLE e (id BIGINT, k BIGINT, ts TIMESTAMP) FROM FILE '" + path + "' FORMAT CSV;\n"
	smallTable := "CREATE TABLE e (id BIGINT, k BIGINT, ts TIMESTAMP) FROM FILE '" + smallPath + "' FORMAT CSV;\n"
	stream := "CREATE STREAM s (id BIGINT, k BIGINT, ts TIMESTAMP) FROM FILE '" + path + "' FORMAT CSV;\n"
	return dir, map[string]string{
		"cross join":      table + "SELECT a.id, b.id AS id2 FROM e a CROSS JOIN e b;\n",
		"a window per ms": table + "SELECT k, count(*) AS n FROM e GROUP BY k, TUMBLE(ts, INTERVAL '1' MILLISECOND);\n",
		"a long HOP":      stream + "SELECT k, count(*) AS n FROM s GROUP BY k, HOP(ts, INTERVAL '1' HOUR, INTERVAL '1' MILLISECOND);\n",
		"small":           smallTable + "SELECT k, count(*) AS n FROM e WHERE id < 100 GROUP BY k;\n",
	}
}
