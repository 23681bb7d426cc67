package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRunOrderByLimitOverAStream: over a stream of many epochs ORDER BY ...
// LIMIT is the whole stream's answer, given when it ends; grouped by a
// window it is each window's top rows. A LIMIT without ORDER BY over
// windows is the first n rows of all (it was n per window, so LIMIT 1 gave
// a row for each of the three windows). Locally and on the cluster.
func TestRunOrderByLimitOverAStream(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "s.csv"), []byte("k,v,ts\n1,5,2024-01-01 00:00:01\n2,7,2024-01-01 00:00:02\n3,1,2024-01-01 00:00:05\n"+
		"1,50,2024-01-01 00:00:12\n2,9,2024-01-01 00:00:13\n2,8,2024-01-01 00:00:14\n3,99,2024-01-01 00:00:25\n"), 0o644)
	q := filepath.Join(dir, "q.sql")
	os.WriteFile(q, []byte(`CREATE STREAM s (k BIGINT, v BIGINT, ts TIMESTAMP) FROM FILE 's.csv' FORMAT CSV;
SELECT k, v FROM s ORDER BY v DESC LIMIT 3;
SELECT k, window_start, sum(v) AS total FROM s GROUP BY k, TUMBLE(ts, INTERVAL '10' SECOND) ORDER BY total DESC LIMIT 1;
SELECT window_start, count(*) AS n FROM s GROUP BY TUMBLE(ts, INTERVAL '10' SECOND) LIMIT 1;
`), 0o644)
	const want = "k,v\n3,99\n1,50\n2,9\n" +
		"k,window_start,total\n2,2024-01-01 00:00:00,7\n1,2024-01-01 00:00:10,50\n3,2024-01-01 00:00:20,99\n" +
		"window_start,n\n2024-01-01 00:00:00,3\n"
	for _, mode := range []string{"--local", "--local=false"} {
		// One row a batch and a 1s watermark delay: many epochs.
		code, out, errs := runCLI(t, "", "run", mode, "--max-delay", "1s", "--batch-size", "1", "--format", "csv", q)
		if code != exitOK || out != want {
			t.Fatalf("%s: exit %d, stdout %q, want %q\n%s", mode, code, out, want, errs)
		}
	}
}
