package main

import (
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

func writeRunFiles(t *testing.T) (dir, query string) {
	dir = t.TempDir()
	os.WriteFile(filepath.Join(dir, "d.csv"), []byte("k,v,ts\n1,10,2024-01-01 00:00:01\n2,20,2024-01-01 00:00:02\nbad,30,2024-01-01 00:00:03\n1,40,2024-01-01 00:00:12\n"), 0o644)
	query = filepath.Join(dir, "q.sql")
	os.WriteFile(query, []byte(`CREATE STREAM d (k BIGINT, v BIGINT, ts TIMESTAMP) FROM FILE 'd.csv' FORMAT CSV;
SELECT k, count(*) AS n FROM d WHERE v > 5 GROUP BY k, TUMBLE(ts, INTERVAL '10' SECOND);
`), 0o644)
	return dir, query
}

func TestRunPrintsWindowsAndReportsBadRows(t *testing.T) {
	_, query := writeRunFiles(t)
	code, out, errs := runCLI(t, "", "run", "--local", "--on-error", "skip", "--parallelism", "2", query)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// Two groups in the first window, one in the second, in window order.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 6 || !strings.Contains(lines[0], "k") || !strings.Contains(lines[4], "1 |    1") || lines[5] != "(3 rows)" {
		t.Fatalf("stdout:\n%s", out)
	}
	if !strings.Contains(errs, "1 malformed") || !strings.Contains(errs, "d.csv:4:") {
		t.Fatalf("stderr: %s", errs)
	}
	// A row that does not fit is bad input (the file's), exit 2.
	code, _, errs = runCLI(t, "", "run", query)
	if code != exitBadInput || !strings.Contains(errs, "d.csv:4:") {
		t.Fatalf("--on-error fail: exit %d: %s", code, errs)
	}
	// On the embedded cluster the workers count and name the bad rows.
	code, _, errs = runCLI(t, "", "run", "--on-error", "skip", query)
	if code != exitOK || !strings.Contains(errs, "1 malformed") || !strings.Contains(errs, "d.csv:4:") {
		t.Fatalf("cluster --on-error skip: exit %d: %s", code, errs)
	}
}

func TestRunWritesFilesAndRejectsBadInput(t *testing.T) {
	dir, query := writeRunFiles(t)
	out := filepath.Join(dir, "out.csv")
	code, _, errs := runCLI(t, "", "run", "--on-error", "skip", "--output", out, query)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, _ := os.ReadFile(out)
	if string(b) != "k,n\n1,1\n2,1\n1,1\n" {
		t.Fatalf("csv:\n%s", b)
	}
	code, _, _ = runCLI(t, "", "run", "--on-error", "maybe", query)
	if code != exitBadInput {
		t.Fatalf("bad --on-error: exit %d", code)
	}
	bad := filepath.Join(dir, "bad.sql")
	os.WriteFile(bad, []byte("SELECT x FROM nowhere;"), 0o644)
	code, _, errs = runCLI(t, "", "run", bad)
	if code != exitBadInput || !strings.Contains(errs, "bad.sql:1:") {
		t.Fatalf("bind error: exit %d: %s", code, errs)
	}
	show := filepath.Join(dir, "show.sql")
	os.WriteFile(show, []byte("SHOW FUNCTIONS;"), 0o644)
	code, stdout, _ := runCLI(t, "", "run", show)
	if code != exitOK || !regexp.MustCompile(`(?m)^\| count +\| aggregate +\| count\(\) -> BIGINT`).MatchString(stdout) || !regexp.MustCompile(`(?m)^\| hop +\| window`).MatchString(stdout) {
		t.Fatalf("SHOW FUNCTIONS: exit %d\n%s", code, stdout)
	}
}

func TestRunReadsTheScriptFromStdin(t *testing.T) {
	dir, _ := writeRunFiles(t)
	// The query reads k, so its bad value is parsed and the row skipped
	// (a column no query reads is pruned before the file is decoded).
	script := "CREATE TABLE d (k BIGINT, v BIGINT, ts TIMESTAMP) FROM FILE '" + filepath.Join(dir, "d.csv") + "' FORMAT CSV;\nSELECT sum(v) AS s FROM d WHERE k > 0;\n"
	code, out, errs := runCLI(t, script, "run", "--on-error", "skip", "--format", "csv", "-")
	if code != exitOK || out != "s\n70\n" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errs)
	}
}

// --format discard runs the query whole and prints no rows (Flink's
// blackhole): what a pass-through query costs without encoding its output.
func TestRunFormatDiscardPrintsNoRows(t *testing.T) {
	dir, _ := writeRunFiles(t)
	script := "CREATE TABLE d (k BIGINT, v BIGINT, ts TIMESTAMP) FROM FILE '" + filepath.Join(dir, "d.csv") + "' FORMAT CSV;\nSELECT k, v FROM d;\n"
	code, out, errs := runCLI(t, script, "run", "--local", "--on-error", "skip", "--format", "discard", "-")
	if code != exitOK || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errs)
	}
	code, _, errs = runCLI(t, script, "run", "--local", "--format", "nowhere", "-")
	if code != exitBadInput || !strings.Contains(errs, "discard") {
		t.Fatalf("an unknown format: exit %d: %s", code, errs)
	}
}

func TestRunReportsLateRows(t *testing.T) {
	dir := t.TempDir()
	// 00:00:03 arrives after the watermark passed 00:00:10 (max delay 1s):
	// its window [0s, 10s) has closed, so it is dropped and counted.
	os.WriteFile(filepath.Join(dir, "d.csv"), []byte("k,ts\n1,2024-01-01 00:00:01\n1,2024-01-01 00:00:12\n1,2024-01-01 00:00:03\n1,2024-01-01 00:00:14\n"), 0o644)
	q := filepath.Join(dir, "q.sql")
	os.WriteFile(q, []byte(`CREATE STREAM d (k BIGINT, ts TIMESTAMP) FROM FILE 'd.csv' FORMAT CSV;
SELECT k, window_start, count(*) AS n FROM d GROUP BY k, TUMBLE(ts, INTERVAL '10' SECOND);
`), 0o644)
	for _, mode := range []string{"--local", "--local=false"} {
		code, out, errs := runCLI(t, "", "run", mode, "--max-delay", "1s", "--batch-size", "1", "--format", "csv", q)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", mode, code, errs)
		}
		if out != "k,window_start,n\n1,2024-01-01 00:00:00,1\n1,2024-01-01 00:00:10,2\n" {
			t.Fatalf("%s: stdout %q\nstderr %s", mode, out, errs)
		}
		// Counted by the executor locally, by the workers on the cluster.
		if !strings.Contains(errs, "1 late") {
			t.Fatalf("%s: stderr %s", mode, errs)
		}
	}
}

// TestRunCountsNullEventTimes: a row without an event time belongs to no
// window; it is dropped, but counted and reported (null_event_time), in a
// windowed aggregate and in a windowed join, locally and on the cluster.
func TestRunCountsNullEventTimes(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(`{"k": 1, "ts": "2024-01-01 00:00:01"}
{"k": 1, "ts": null}
{"k": 2, "ts": "2024-01-01 00:00:02"}
{"k": 2}
`), 0o644)
	q := filepath.Join(dir, "q.sql")
	os.WriteFile(q, []byte(`CREATE STREAM d (k BIGINT, ts TIMESTAMP) FROM FILE 'd.jsonl' FORMAT JSON;
SELECT k, count(*) AS n FROM d GROUP BY k, TUMBLE(ts, INTERVAL '10' SECOND);
`), 0o644)
	for _, mode := range []string{"--local", "--local=false"} {
		code, out, errs := runCLI(t, "", "run", mode, "--format", "csv", q)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", mode, code, errs)
		}
		if out != "k,n\n1,1\n2,1\n" {
			t.Fatalf("%s: stdout %q\nstderr %s", mode, out, errs)
		}
		if !strings.Contains(errs, "dropped: 2 null_event_time") {
			t.Fatalf("%s: the NULL event times are not reported:\n%s", mode, errs)
		}
	}
}

// TestRunDefaultMatchesLocal: the default mode runs the streaming example on
// an embedded cluster (one NATS server, a worker per tier, named on stderr
// and not on stdout) and prints exactly what the one-process executor does.
func TestRunDefaultMatchesLocal(t *testing.T) {
	query := filepath.Join("..", "..", "examples", "streaming", "query.sql")
	code, want, errs := runCLI(t, "", "run", "--local", "--format", "csv", query)
	if code != exitOK || strings.Count(want, "\n") < 10 {
		t.Fatalf("--local: exit %d, %d lines\n%s", code, strings.Count(want, "\n"), errs)
	}
	code, got, errs := runCLI(t, "", "run", "--format", "csv", query)
	if code != exitOK {
		t.Fatalf("embedded: exit %d: %s", code, errs)
	}
	if got != want {
		t.Fatalf("embedded output differs from --local:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(errs, "-- embedded cluster: 3 workers (edge-1 edge, hub-1 hub, cloud-1 cloud) on nats://127.0.0.1:") ||
		strings.Count(errs, "-- query ") != 1 || !strings.Contains(errs, " finished: ") {
		t.Fatalf("stderr:\n%s", errs)
	}
	code, _, errs = runCLI(t, "", "run", "--local", "--processes", query)
	if code != exitBadInput || !strings.Contains(errs, "exclude each other") {
		t.Fatalf("--local --processes: exit %d: %s", code, errs)
	}
	code, _, errs = runCLI(t, "", "run", "--sched", "fastest", query)
	if code != exitBadInput || !strings.Contains(errs, "--sched") || !strings.Contains(errs, "sneakpeek") {
		t.Fatalf("--sched fastest: exit %d: %s", code, errs)
	}
	code, _, errs = runCLI(t, "", "run", "--sched", "sneakpeek", "--evidence", t.TempDir(), query)
	if code != exitBadInput || !strings.Contains(errs, "--evidence") {
		t.Fatalf("--evidence without a sample: exit %d: %s", code, errs)
	}
}

// TestRunProcesses: --processes starts each worker of --infra as a child
// process (the test binary, turned into the real CLI by TestMain) and gives
// the rows an in-process run gives.
func TestRunProcesses(t *testing.T) {
	dir, query := writeRunFiles(t)
	inf := filepath.Join(dir, "infra.yaml")
	os.WriteFile(inf, []byte("tiers:\n  - name: edge\n  - name: cloud\nworker_types:\n  - name: x1\n    price: 0.1\nworkers:\n  - name: e1\n    type: x1\n    tier: edge\n  - name: c1\n    type: x1\n    tier: cloud\ndefault_link:\n  cost_per_gb: 0\n"), 0o644)
	code, want, errs := runCLI(t, "", "run", "--local", "--on-error", "skip", "--format", "csv", query)
	if code != exitOK {
		t.Fatalf("--local: exit %d: %s", code, errs)
	}
	t.Setenv(childEnv, "real")
	code, got, errs := runCLI(t, "", "run", "--processes", "--infra", inf, "--on-error", "skip", "--format", "csv", query)
	if code != exitOK || got != want {
		t.Fatalf("--processes: exit %d, stdout %q, want %q\nstderr %s", code, got, want, errs)
	}
	if !strings.Contains(errs, "-- cluster of worker processes: 2 workers (e1 edge, c1 cloud) on nats://") {
		t.Fatalf("stderr:\n%s", errs)
	}
}

// TestRunInterruptStopsCleanly: a query on a NATS subject nothing publishes
// to says, once, what it waits on (it used to wait in silence); Ctrl-C then
// stops it cleanly: the stopped query's complete windows print, the run
// says it was interrupted, and exits 130 as shells expect of an interrupted
// command (it exited 0) — on the embedded cluster and with --local.
func TestRunInterruptStopsCleanly(t *testing.T) {
	dir := t.TempDir()
	q := filepath.Join(dir, "q.sql")
	os.WriteFile(q, []byte(`CREATE STREAM s (k BIGINT, ts TIMESTAMP) FROM NATS 'nobody.publishes' FORMAT JSON;
SELECT k, count(*) AS n FROM s GROUP BY k, TUMBLE(ts, INTERVAL '1' SECOND);
`), 0o644)
	// The notice says how long the source has waited: 3 s, or more where a
	// busy machine runs the check late (it said 4s under load 30).
	waiting := regexp.MustCompile(`-- waiting \d+s on stream s, NATS subject "nobody.publishes": nothing has arrived yet \(Ctrl-C stops\)`)
	for _, args := range [][]string{{"run", q}, {"run", "--local", q}} {
		t.Run(args[1], func(t *testing.T) {
			t.Parallel()
			var stdout, stderr syncBuffer
			cmd := osexec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), childEnv+"=real")
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			deadline := time.Now().Add(20 * time.Second)
			for !waiting.MatchString(stderr.String()) {
				if time.Now().After(deadline) {
					_ = cmd.Process.Kill()
					t.Fatalf("no notice of what the query waits on:\n%s", stderr.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			_ = cmd.Process.Signal(os.Interrupt)
			select {
			case <-done:
				if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
					t.Fatalf("exit %d, want %d\n%s", code, exitInterrupted, stderr.String())
				}
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("run did not stop on SIGINT:\n%s", stderr.String())
			}
			if !strings.Contains(stderr.String(), "-- interrupted") || strings.Count(stderr.String(), "-- waiting") != 1 || !strings.Contains(stdout.String(), "(0 rows)") {
				t.Fatalf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			}
		})
	}
}

// TestRunLogDropsRepeatedModelLines: every worker holding a query's part
// reports its model operators; stderr says it once per query.
func TestRunLogDropsRepeatedModelLines(t *testing.T) {
	var b strings.Builder
	l := &lockedWriter{w: &b}
	for _, s := range []string{"-- model m: variant a\n", "-- model m: variant a\n", "-- model n: variant b\n",
		"-- query q1 finished\n", "-- model m: variant a\n", "-- model m: variant a\n"} {
		if n, err := l.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("write %q: %d, %v", s, n, err)
		}
	}
	if want := "-- model m: variant a\n-- model n: variant b\n-- query q1 finished\n-- model m: variant a\n"; b.String() != want {
		t.Fatalf("log %q, want %q", b.String(), want)
	}
}

// A model whose file does not exist is bad input (exit 2) naming the
// position of the variant that names the file (its cause), not the call's,
// and said once: not a runtime failure.
func TestRunMissingModelFileIsBadInput(t *testing.T) {
	shelf, err := filepath.Abs("../../examples/fashion/data/shelf.arrow")
	if err != nil {
		t.Fatal(err)
	}
	q := filepath.Join(t.TempDir(), "q.sql")
	os.WriteFile(q, []byte(`CREATE MODEL m TASK 'image-classification' OUTPUTS (label VARCHAR, score FLOAT)
  VARIANTS (v FROM 'nope.onnx');
CREATE STREAM s (id BIGINT, ts TIMESTAMP, image TENSOR(FLOAT, 1, 28, 28)) FROM FILE '`+shelf+`' FORMAT ARROW;
SELECT id, c.label FROM s CROSS JOIN LATERAL m(image) AS c(label, score);
`), 0o644)
	// Locally, and on the embedded cluster, where the error crosses NATS as
	// text and its kind travels with it.
	for _, mode := range [][]string{{"--local"}, nil} {
		code, out, errs := runCLI(t, "", append(append([]string{"run"}, mode...), q)...)
		if code != exitBadInput || !strings.Contains(errs, "q.sql:2:13:") || strings.Count(errs, "nope.onnx not found") != 1 {
			t.Fatalf("missing model file %v: exit %d: %s", mode, code, errs)
		}
		if out != "" {
			t.Errorf("%v: a query that failed printed %q", mode, out)
		}
	}
}

// An EXPLAIN in a script prints its query's plan (against the catalog as the
// script made it) in both modes; a bad option is bad input at the option.
func TestRunExplainsInScripts(t *testing.T) {
	_, query := writeRunFiles(t)
	src, err := os.ReadFile(query)
	if err != nil {
		t.Fatal(err)
	}
	body := string(src)
	i := strings.LastIndex(body, "SELECT")
	q := filepath.Join(filepath.Dir(query), "explain.sql")
	os.WriteFile(q, []byte(body[:i]+"EXPLAIN (STRATEGY exhaustive) "+body[i:]), 0o644)
	for _, mode := range []string{"--local", "--local=false"} {
		code, out, errs := runCLI(t, "", "run", mode, q)
		if code != exitOK || !strings.Contains(out, "Plan (strategy exhaustive)") || !strings.Contains(out, "Totals:") {
			t.Fatalf("%s: exit %d\n%s\n%s", mode, code, out, errs)
		}
	}
	// FRONTIER prints the accuracy/cost frontier instead of one plan.
	os.WriteFile(q, []byte(body[:i]+"EXPLAIN (FRONTIER) "+body[i:]), 0o644)
	if code, out, errs := runCLI(t, "", "run", "--local", q); code != exitOK || !strings.Contains(out, "Accuracy/cost frontier") || !strings.Contains(out, "cost per hour") {
		t.Fatalf("frontier: exit %d\n%s\n%s", code, out, errs)
	}
	os.WriteFile(q, []byte(body[:i]+"EXPLAIN (COLOUR red) "+body[i:]), 0o644)
	code, _, errs := runCLI(t, "", "run", "--local", q)
	if code != exitBadInput || !strings.Contains(errs, "unknown EXPLAIN option COLOUR") || !strings.Contains(errs, "explain.sql:") {
		t.Fatalf("bad option: exit %d: %s", code, errs)
	}
}

// --stats writes the run's summary with exactly its documented fields, the
// sinks' end-to-end latency and the share of rows over LATENCY; --replay
// feeds the file at its RATE, so the run cannot be faster than the rows'
// spacing.
func TestRunStatsAndReplay(t *testing.T) {
	dir := t.TempDir()
	var csv strings.Builder
	csv.WriteString("k,v,ts\n")
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&csv, "%d,%d,2024-01-01 00:00:%02d\n", i%3, i, i)
	}
	csv.WriteString("bad,1,2024-01-01 00:00:11\n")
	os.WriteFile(filepath.Join(dir, "d.csv"), []byte(csv.String()), 0o644)
	q := filepath.Join(dir, "q.sql")
	os.WriteFile(q, []byte(`CREATE STREAM d (k BIGINT, v BIGINT, ts TIMESTAMP) FROM FILE 'd.csv' FORMAT CSV RATE 20 PER SECOND;
SELECT k, v FROM d WHERE v >= 0 WITH (LATENCY <= 1 MS);
`), 0o644)
	stats := filepath.Join(dir, "stats.json")
	code, _, errs := runCLI(t, "", "run", "--replay", "--batch-size", "1", "--on-error", "skip", "--stats", stats, "--format", "csv", q)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "latency p50 ") || !strings.Contains(errs, "of rows over LATENCY 1 ms") {
		t.Errorf("stderr has no latency summary: %s", errs)
	}
	b, err := os.ReadFile(stats)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatalf("stats %s: %v", b, err)
	}
	var keys []string
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if got := strings.Join(keys, ","); got != "dropped,elapsed_s,latency_ms,recoveries,replans,rows_in,rows_out,slo_miss_rate" {
		t.Fatalf("stats fields %s", got)
	}
	var s struct {
		In         int64              `json:"rows_in"`
		Out        int64              `json:"rows_out"`
		Dropped    map[string]int64   `json:"dropped"`
		LatencyMs  map[string]float64 `json:"latency_ms"`
		Miss       *float64           `json:"slo_miss_rate"`
		Replans    []any              `json:"replans"`
		Recoveries []any              `json:"recoveries"`
		Elapsed    float64            `json:"elapsed_s"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.In != 10 || s.Out != 10 || s.Dropped["malformed"] != 1 || s.Dropped["late"] != 0 {
		t.Errorf("rows in %d out %d dropped %v; want 10, 10 and one malformed: %s", s.In, s.Out, s.Dropped, b)
	}
	if p50, p99 := s.LatencyMs["p50"], s.LatencyMs["p99"]; p50 <= 0 || p99 < p50 {
		t.Errorf("latency %v: %s", s.LatencyMs, b)
	}
	if s.Miss == nil || *s.Miss < 0 || *s.Miss > 1 {
		t.Errorf("slo_miss_rate %v with LATENCY <= 1 MS: %s", s.Miss, b)
	}
	if s.Replans == nil || s.Recoveries == nil || len(s.Replans)+len(s.Recoveries) != 0 {
		t.Errorf("replans and recoveries should be empty lists: %s", b)
	}
	// 10 rows at 20 a second: the last leaves 0.45 s after the first.
	if s.Elapsed < 0.45 {
		t.Errorf("elapsed %.3fs: --replay did not pace the file at its RATE", s.Elapsed)
	}
	// Without LATENCY the miss rate is null.
	os.WriteFile(q, []byte(`CREATE STREAM d (k BIGINT, v BIGINT, ts TIMESTAMP) FROM FILE 'd.csv' FORMAT CSV;
SELECT k, v FROM d;
`), 0o644)
	if code, _, errs := runCLI(t, "", "run", "--on-error", "skip", "--stats", stats, q); code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if b, _ := os.ReadFile(stats); !strings.Contains(string(b), `"slo_miss_rate":null`) {
		t.Errorf("without LATENCY: %s", b)
	}
	if code, _, _ := runCLI(t, "", "run", "--local", "--stats", stats, q); code != exitBadInput {
		t.Errorf("--local --stats: exit %d, want %d", code, exitBadInput)
	}
}

// --memory-limit bounds a GROUP BY's state, a join's table and the rows an
// ORDER BY or an OVER holds: past it they spill to disk (said on stderr) and the
// answer is the one computed in memory; a size that does not parse is bad
// input.
func TestRunMemoryLimitSpills(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("k,v\n")
	for i := range 3000 {
		fmt.Fprintf(&b, "%d,%d\n", i%1000, i)
	}
	os.WriteFile(filepath.Join(dir, "t.csv"), []byte(b.String()), 0o644)
	query := filepath.Join(dir, "q.sql")
	os.WriteFile(query, []byte("CREATE TABLE t (k BIGINT, v BIGINT) FROM FILE 't.csv' FORMAT CSV;\nSELECT count(*) AS groups, sum(s) AS total FROM (SELECT k, sum(v) AS s FROM t GROUP BY k) AS g;\n"), 0o644)
	code, out, errs := runCLI(t, "", "run", "--local", "--batch-size", "100", "--memory-limit", "4KiB", query)
	if code != exitOK || !strings.Contains(errs, "spilled to disk") || !strings.Contains(out, "1000 | 4498500") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	// A join whose table passes the limit spills too, and says so.
	join := filepath.Join(dir, "j.sql")
	os.WriteFile(join, []byte("CREATE TABLE t (k BIGINT, v BIGINT) FROM FILE 't.csv' FORMAT CSV;\nSELECT count(*) AS n, sum(b.v) AS total FROM t AS a JOIN t AS b ON a.v = b.v;\n"), 0o644)
	code, out, errs = runCLI(t, "", "run", "--local", "--batch-size", "100", "--memory-limit", "4KiB", join)
	if code != exitOK || !strings.Contains(errs, "join tables spilled to disk 1 time (") || !strings.Contains(out, "3000 | 4498500") {
		t.Fatalf("join: exit %d\n%s\n%s", code, out, errs)
	}
	// An ORDER BY past half the limit sorts in runs on disk, and says so.
	order := filepath.Join(dir, "o.sql")
	os.WriteFile(order, []byte("CREATE TABLE t (k BIGINT, v BIGINT) FROM FILE 't.csv' FORMAT CSV;\nSELECT k, v FROM t ORDER BY k DESC, v;\n"), 0o644)
	code, out, errs = runCLI(t, "", "run", "--local", "--batch-size", "100", "--format", "csv", "--memory-limit", "16KiB", order)
	if code != exitOK || !strings.Contains(errs, "sorted to disk in ") || !strings.HasPrefix(out, "k,v\n999,999\n999,1999\n999,2999\n998,998\n") || strings.Count(out, "\n") != 3001 {
		t.Fatalf("order: exit %d\n%.200s\n%s", code, out, errs)
	}
	// An OVER past half the limit puts its rows on disk by partition.
	over := filepath.Join(dir, "w.sql")
	os.WriteFile(over, []byte("CREATE TABLE t (k BIGINT, v BIGINT) FROM FILE 't.csv' FORMAT CSV;\nSELECT count(*) AS n, sum(r) AS s FROM (SELECT rank() OVER (PARTITION BY k ORDER BY v DESC) AS r FROM t) x;\n"), 0o644)
	code, out, errs = runCLI(t, "", "run", "--local", "--batch-size", "100", "--memory-limit", "16KiB", over)
	if code != exitOK || !strings.Contains(errs, "spilled to disk by partition 1 time (") || !strings.Contains(out, "3000 | 6000") {
		t.Fatalf("over: exit %d\n%s\n%s", code, out, errs)
	}
	if code, _, errs := runCLI(t, "", "run", "--local", "--memory-limit", "lots", query); code != exitBadInput || !strings.Contains(errs, "--memory-limit") {
		t.Fatalf("bad size: exit %d: %s", code, errs)
	}
}
