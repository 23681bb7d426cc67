package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputFormatsAsDuckDB: run and the REPL print results alike, as
// DuckDB's CLI does: json is one array (run wrote JSON lines), jsonl a row
// a line, and intervals and timestamps read as DuckDB prints them (run
// printed 1h30m0s, the REPL 5400000000us and 2024-05-01 08:00:00.5Z).
func TestOutputFormatsAsDuckDB(t *testing.T) {
	const q = "SELECT INTERVAL '90' MINUTE AS i, INTERVAL '2' DAY AS d, TIMESTAMP '2024-05-01 08:00:00.5' AS ts;\n"
	const row = `{"i":"01:30:00","d":"2 days","ts":"2024-05-01 08:00:00.5"}`
	want := map[string]string{
		"csv":   "i,d,ts\n01:30:00,2 days,2024-05-01 08:00:00.5\n",
		"json":  "[" + row + "]\n",
		"jsonl": row + "\n",
	}
	script := filepath.Join(t.TempDir(), "q.sql")
	if err := os.WriteFile(script, []byte(q), 0o644); err != nil {
		t.Fatal(err)
	}
	for format, w := range want {
		for _, args := range [][]string{
			{"run", "--local", "--format", format, script},
			{"run", "--format", format, script},
			{"repl", "--format", format, "-f", script},
		} {
			code, out, errs := runCLI(t, "", args...)
			if code != exitOK || out != w {
				t.Errorf("%v: exit %d\n%s\nwant\n%s%s", args, code, out, w, errs)
			}
		}
	}
	// Two rows of json: still one array, a row a line.
	code, out, errs := runCLI(t, "SELECT 1 AS a UNION ALL SELECT 2 AS a;", "run", "--local", "--format", "json", "-")
	var rows []map[string]int
	if err := json.Unmarshal([]byte(out), &rows); code != exitOK || err != nil || len(rows) != 2 || !strings.Contains(out, "},\n{") {
		t.Errorf("two rows: exit %d, %v\n%s%s", code, err, out, errs)
	}
}

// TestSeveralResultsOneFileEach: --output with a script of several SELECTs
// writes one file per query, numbered, as stderr says before the first
// runs; each has its own header (they shared one CSV, and a second Parquet
// result failed after the first had run).
func TestSeveralResultsOneFileEach(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "q.sql")
	if err := os.WriteFile(script, []byte("SELECT 1 AS a;\nSELECT 'x' AS b, 2 AS c;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{".csv", ".parquet"} {
		out := filepath.Join(dir, "res"+ext)
		code, _, errs := runCLI(t, "", "run", "--local", "--output", out, script)
		if code != exitOK {
			t.Fatalf("%s: exit %d\n%s", ext, code, errs)
		}
		first, second := filepath.Join(dir, "res-1"+ext), filepath.Join(dir, "res-2"+ext)
		if !strings.Contains(errs, "-- 2 queries: one file each, "+first+", "+second) {
			t.Errorf("%s: stderr does not say where the results go:\n%s", ext, errs)
		}
		for _, f := range []string{first, second} {
			if st, err := os.Stat(f); err != nil || st.Size() == 0 {
				t.Errorf("%s: %v", f, err)
			}
		}
		if ext == ".csv" {
			b1, _ := os.ReadFile(first)
			b2, _ := os.ReadFile(second)
			if string(b1) != "a\n1\n" || string(b2) != "b,c\nx,2\n" {
				t.Errorf("files %q and %q, want a\\n1\\n and b,c\\nx,2\\n", b1, b2)
			}
		}
	}
}
