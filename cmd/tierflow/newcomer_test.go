package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// TestTyposGetDidYouMean: a mistyped command or benchmark names the one
// meant, and a wrong number of arguments shows the usage line. Before, only
// a prefix ("import jelly") got a suggestion: "tierflow rn" and "bench
// plnner" listed every command, and "tierflow run" said only "accepts 1
// arg(s), received 0".
func TestTyposGetDidYouMean(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"rn", "q.sql"}, `unknown command "rn" for "tierflow" (did you mean "run"?)`},
		{[]string{"explian", "q.sql"}, `(did you mean "explain"?)`},
		{[]string{"bench", "plnner"}, `unknown command "plnner" for "tierflow bench" (did you mean "planner"?)`},
		{[]string{"run"}, "accepts 1 arg(s), received 0 (usage: tierflow run [flags] QUERY.sql|-)"},
		{[]string{"publish", "x.csv"}, "(usage: tierflow publish [flags] FILE SUBJECT)"},
		// Cobra's help printed the root usage and exited 0 here.
		{[]string{"help", "runn"}, `unknown help topic "runn" for "tierflow" (did you mean "run"?)`},
		{[]string{"help", "bench", "plnner"}, `unknown help topic "plnner" for "tierflow bench" (did you mean "planner"?)`},
		// --format that a command would ignore: it printed text, exit 0.
		{[]string{"version", "--format", "json"}, `--format json: "tierflow version" has one output form`},
		{[]string{"fmt", "--format", "json", "q.sql"}, `"tierflow fmt" has one output form (--format is for bench,`},
		// It named no model: which ones there are, and the one meant.
		{[]string{"profile", "--catalog", "../../examples/fashion/catalog.yaml", "--model", "clasify"}, `--model clasify: no such model in ../../examples/fashion/catalog.yaml (did you mean "classify"?); its models: `},
	} {
		code, _, errs := runCLI(t, "", c.args...)
		if code != exitBadInput || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d (want %d), stderr (want %q on one line):\n%s", c.args, code, exitBadInput, c.want, errs)
		}
	}
	for _, args := range [][]string{{"help", "run"}, {"help", "bench", "planner"}, {"help"}} {
		code, out, errs := runCLI(t, "", args...)
		if code != exitOK || !strings.Contains(out, "Usage:") {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errs)
		}
	}
}

// TestOutputRefusesBinaryExtensions: --output x.arrow wrote a text table
// into a file named as Arrow IPC (exit 0); it is refused before anything
// runs, naming what is written.
func TestOutputRefusesBinaryExtensions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"out.arrow", "out.feather", "OUT.IPC", "out.xlsx", "out.duckdb"} {
		out := filepath.Join(dir, name)
		code, _, errs := runCLI(t, "SELECT 1 AS a;", "run", "--local", "--output", out, "-")
		if code != exitBadInput || !strings.Contains(errs, "tierflow writes no ") || !strings.Contains(errs, ".parquet") {
			t.Errorf("--output %s: exit %d (want %d)\n%s", name, code, exitBadInput, errs)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("--output %s: the file was written", name)
		}
	}
	// A text extension still gets the table.
	out := filepath.Join(dir, "out.txt")
	if code, _, errs := runCLI(t, "SELECT 1 AS a;", "run", "--local", "--output", out, "-"); code != exitOK {
		t.Fatalf("--output out.txt: exit %d\n%s", code, errs)
	}
	if b, _ := os.ReadFile(out); !strings.Contains(string(b), "(1 row)") {
		t.Errorf("out.txt:\n%s", b)
	}
}

// TestReplFileFollowsTheRuleForDefaults: `repl -f FILE` takes the catalog
// and infrastructure beside FILE as `run FILE` does, and says so. Before,
// `repl -f examples/fashion/query.sql` failed with unknown stream "shelf"
// that run found in the catalog.yaml beside it.
func TestReplFileFollowsTheRuleForDefaults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("rows.csv", "k,ts\n1,2024-05-01 08:00:00\n2,2024-05-01 08:00:01\n")
	write("catalog.yaml", "streams:\n  - {name: rows, source: file, subject: rows.csv, format: csv, columns: [{name: k, type: BIGINT}, {name: ts, type: TIMESTAMP}]}\n")
	write("q.sql", "SELECT k * 10 AS k10 FROM rows;\n")
	script := filepath.Join(dir, "q.sql")
	for _, args := range [][]string{{"run", "--local", script}, {"repl", "-f", script}} {
		code, out, errs := runCLI(t, "", args...)
		if code != exitOK || !strings.Contains(out, "20") {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errs)
		}
		if want := "-- catalog " + filepath.Join(dir, "catalog.yaml") + " (beside the script)"; !strings.Contains(errs, want) {
			t.Errorf("%v: stderr does not say what it loaded (want %q):\n%s", args, want, errs)
		}
	}
}

// TestRunParsesBeforeItStarts: a script that does not parse fails before
// the embedded cluster starts and before --output is created. Before,
// `run README.md` started three workers and made the output file first.
func TestRunParsesBeforeItStarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "notes.sql")
	if err := os.WriteFile(script, []byte("# notes\nSELECT 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.csv")
	code, _, errs := runCLI(t, "", "run", "--output", out, script)
	if code != exitBadInput || !strings.Contains(errs, script+":1:1: unexpected character '#'") {
		t.Errorf("exit %d (want %d)\n%s", code, exitBadInput, errs)
	}
	if strings.Contains(errs, "-- embedded cluster") {
		t.Errorf("a cluster started for a script that does not parse:\n%s", errs)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("--output was created for a script that does not parse")
	}
}

// TestReplaySaysWhenAStreamHasNoRate: --replay over a FROM FILE stream
// without RATE finished at full speed and said nothing, as if the flag did
// nothing; it says so at the CREATE, and not for a stream with a RATE.
func TestReplaySaysWhenAStreamHasNoRate(t *testing.T) {
	t.Parallel()
	write := fileWriter(t, t.TempDir())
	write("rows.csv", "k,ts\n1,2024-05-01 08:00:00\n2,2024-05-01 08:00:00.01\n")
	noRate := write("norate.sql", "CREATE STREAM rows (k BIGINT, ts TIMESTAMP) FROM FILE 'rows.csv' FORMAT CSV;\nSELECT k FROM rows;\n")
	rate := write("rate.sql", "CREATE STREAM rows (k BIGINT, ts TIMESTAMP) FROM FILE 'rows.csv' FORMAT CSV RATE 100 PER SECOND;\nSELECT k FROM rows;\n")
	code, _, errs := runCLI(t, "", "run", "--local", "--replay", noRate)
	if want := noRate + ":1:1: --replay: stream rows declares no RATE"; code != exitOK || !strings.Contains(errs, want) {
		t.Errorf("no RATE: exit %d, want %q in stderr:\n%s", code, want, errs)
	}
	code, _, errs = runCLI(t, "", "run", "--local", "--replay", rate)
	if code != exitOK || strings.Contains(errs, "declares no RATE") {
		t.Errorf("RATE 100: exit %d\n%s", code, errs)
	}
}

// TestStdinScriptOnATerminalSaysSo: `tierflow fmt` without a file, on a
// terminal, waited for a script in silence; it says where it reads from and
// how to end, then formats what was typed.
func TestStdinScriptOnATerminalSaysSo(t *testing.T) {
	t.Parallel()
	tm, cmd := startTerm(t, "real", t.TempDir(), "fmt")
	tm.expect(`reading the script from standard input; end it with Ctrl-D`)
	tm.send("select 1 as a\n")
	tm.send("\x04")
	tm.expect(`SELECT 1 AS a;`)
	waitExit(t, cmd)
}

// TestSubmitCountsWhatRunCounts: submit sent no watermark delay, so the
// workers dropped the out-of-order readings that run (--max-delay 2s)
// counts: examples/streaming gave 61 windows and "dropped: 12 late"
// against run's 62.
func TestSubmitCountsWhatRunCounts(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := cluster.StartEmbedded(ctx, cluster.Options{Infra: cluster.DefaultInfra()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const script = "../../examples/streaming/query.sql"
	code, want, errs := runCLI(t, "", "run", "--local", "--format", "csv", script)
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s", code, errs)
	}
	code, got, errs := runCLI(t, "", "submit", "--nats", c.URL(), "--format", "csv", script)
	if code != exitOK || strings.Contains(errs, "dropped") {
		t.Fatalf("submit: exit %d\n%s", code, errs)
	}
	if err := clustertest.SameRows(got, want); err != nil {
		t.Errorf("submit's rows are not run's: %v\n%s", err, errs)
	}
}

// TestExplainAnalyzeRunsWhatRunRuns: `explain --analyze` of an INSERT INTO
// a stdout sink started seven workers and then failed ("not supported yet:
// INSERT INTO alerts (stdout) on a cluster") where `run` runs it; it
// measures the SELECT on the workers and says the sink is not written.
func TestExplainAnalyzeRunsWhatRunRuns(t *testing.T) {
	t.Parallel()
	const script = "../../examples/fashion/query.sql"
	code, out, errs := runCLI(t, "", "explain", "--analyze", "--duration", "1s", script)
	if code != exitOK || !strings.Contains(out, "EXPLAIN ANALYZE") || strings.Contains(errs, "not supported") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if want := script + ":5:1: EXPLAIN ANALYZE runs the SELECT of INSERT INTO alerts on the workers and counts its rows; alerts (stdout) is not written"; !strings.Contains(errs, want) {
		t.Errorf("stderr does not say what ran (want %q):\n%s", want, errs)
	}
}

// TestUnknownSettingPointsAtItsName: SET planner.strategi was blamed at
// 1:1 (the SET) with every setting listed; it is blamed at the name, with
// the one meant, in run and explain alike.
func TestUnknownSettingPointsAtItsName(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "s.sql")
	if err := os.WriteFile(script, []byte("SELECT 1 AS a;\nSET  planner.strategi = 'exhaustive';\nSELECT 2 AS b;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := script + `:2:6: SET planner.strategi: unknown setting (did you mean "planner.strategy"?)`
	for _, args := range [][]string{{"run", "--local", script}, {"explain", script}} {
		code, _, errs := runCLI(t, "", args...)
		if code != exitBadInput || !strings.Contains(errs, want) {
			t.Errorf("%v: exit %d (want %d), want %q in stderr:\n%s", args, code, exitBadInput, want, errs)
		}
	}
}

// TestCountsAgreeWithTheirNouns: "on 1 workers" and "1 rows written": every
// count on stderr goes through one helper (cli.Count). The cluster's line
// is checked on its own: a cluster here would test the machine's load.
func TestCountsAgreeWithTheirNouns(t *testing.T) {
	t.Parallel()
	one := regexp.MustCompile(`\b1 (rows|workers|queries|messages|threads)\b`)
	line := cluster.Summary(deploy.QueryInfo{Query: "q-1", State: "finished", ResultRows: 1, Workers: []string{"edge-1"},
		Operators: []dataflow.InstanceStats{{Operator: "scan s", RowsOut: 1}}})
	if !strings.HasPrefix(line, "-- query q-1 finished: 1 row on 1 worker, 1 row read") || one.MatchString(line) {
		t.Errorf("cluster: %s", line)
	}
	code, _, errs := runCLI(t, "SELECT 1 AS a;", "run", "--local", "-")
	if code != exitOK || !strings.Contains(errs, "-- 0 rows read, 1 row written") || one.MatchString(errs) {
		t.Errorf("local: exit %d\n%s", code, errs)
	}
}

// TestSubmitCarriesRunsSourceFlags: submit had no --on-error and no
// --batch-size, which run has: the same flags, with run's defaults and
// meaning, travel in the submit request (a stand-in coordinator reads it).
func TestSubmitCarriesRunsSourceFlags(t *testing.T) {
	t.Parallel()
	srv := clustertest.NATSServer(t)
	nc := clustertest.Connect(t, srv)
	got := make(chan deploy.Script, 4)
	sub, err := nc.Subscribe(deploy.SubjectSubmit+".>", func(m *nats.Msg) {
		var req deploy.SubmitRequest
		_ = json.Unmarshal(m.Data, &req)
		got <- req.Script
		b, _ := json.Marshal(deploy.SubmitReply{Query: req.Query, Error: "stand-in coordinator: not run"})
		_ = m.Respond(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "q.sql")
	if err := os.WriteFile(script, []byte("SELECT 1 AS a;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args    []string
		onError string
		batch   int
	}{
		{nil, "fail", 4096},
		{[]string{"--on-error", "skip", "--batch-size", "64"}, "skip", 64},
	} {
		args := append(append([]string{"submit", "--nats", srv.ClientURL()}, c.args...), script)
		code, _, errs := runCLI(t, "", args...)
		if code == exitOK || !strings.Contains(errs, "stand-in coordinator") {
			t.Fatalf("%v: exit %d\n%s", c.args, code, errs)
		}
		select {
		case sc := <-got:
			if sc.OnError != c.onError || sc.BatchSize != c.batch {
				t.Errorf("%v: the request carries on_error %q, batch_size %d; want %q, %d", c.args, sc.OnError, sc.BatchSize, c.onError, c.batch)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%v: no submit request", c.args)
		}
	}
	for _, args := range [][]string{{"--on-error", "ignore"}, {"--batch-size", "0"}} {
		code, _, errs := runCLI(t, "", append(append([]string{"submit", "--nats", srv.ClientURL()}, args...), script)...)
		if code != exitBadInput {
			t.Errorf("%v: exit %d (want %d)\n%s", args, code, exitBadInput, errs)
		}
	}
}

// TestReplFileFromElsewhereNamesTheModelFileOnce: `repl -f DIR/x.sql` from
// another directory said "file DIR/models/m.onnx not found (tried
// [DIR/DIR/models/m.onnx ...])": the REPL had rebased the file, which the
// model runtime then looked for beside the script again.
func TestReplFileFromElsewhereNamesTheModelFileOnce(t *testing.T) {
	t.Parallel()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.Rel(wd, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "t.csv"), []byte("k,x\n1,2.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "x.sql")
	src := "CREATE TABLE t (k BIGINT, x FLOAT) FROM FILE 't.csv' FORMAT CSV;\n" +
		"CREATE MODEL m TASK 'regression' INPUTS (x FLOAT) OUTPUTS (y FLOAT)\n  VARIANTS (only FROM 'models/missing.onnx');\n" +
		"SELECT t.k, r.y FROM t CROSS JOIN LATERAL m(t.x) AS r(y);\n"
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	want := script + ":3:13: inference: cannot run model: variant only: file models/missing.onnx not found (tried [" + filepath.Join(dir, "models", "missing.onnx") + " models/missing.onnx])"
	for _, args := range [][]string{{"repl", "-f", script}, {"run", "--local", script}} {
		code, _, errs := runCLI(t, "", args...)
		if code != exitBadInput || !strings.Contains(errs, want) || strings.Count(errs, "not found") != 1 {
			t.Errorf("%v: exit %d (want %d), want once:\n%s\nstderr:\n%s", args, code, exitBadInput, want, errs)
		}
	}
}

// TestRunChecksNamesBeforeTheClusterStarts: an unknown table, stream or
// model, or a model without any of its files, failed only once the embedded
// cluster was up (seconds); they fail before it starts, at their position.
func TestRunChecksNamesBeforeTheClusterStarts(t *testing.T) {
	t.Parallel()
	write := fileWriter(t, t.TempDir())
	write("t.csv", "k,x\n1,2.0\n")
	const table = "CREATE TABLE t (k BIGINT, x FLOAT) FROM FILE 't.csv' FORMAT CSV;\n"
	const model = "CREATE MODEL m TASK 'regression' INPUTS (x FLOAT) OUTPUTS (y FLOAT)\n  VARIANTS (only FROM 'models/missing.onnx');\n"
	for _, c := range []struct{ name, src, want string }{
		{"table.sql", table + "SELECT k FROM tt;\n", `table.sql:2:15: unknown stream, table or view "tt" (did you mean "t"?)`},
		{"model.sql", table + "SELECT t.k, r.y FROM t CROSS JOIN LATERAL mm(t.x) AS r(y);\n", `unknown model "mm"`},
		{"file.sql", table + model + "SELECT 1 AS one;\nSELECT t.k, r.y FROM t CROSS JOIN LATERAL m(t.x) AS r(y);\n",
			"file.sql:3:13: inference: cannot run model: variant only: file models/missing.onnx not found"},
	} {
		script := write(c.name, c.src)
		code, out, errs := runCLI(t, "", "run", script)
		if code != exitBadInput || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d (want %d), want %q in stderr:\n%s", c.name, code, exitBadInput, c.want, errs)
		}
		if strings.Contains(errs, "-- embedded cluster") || out != "" {
			t.Errorf("%s: the cluster started (or a query ran) first:\n%s%s", c.name, out, errs)
		}
	}
}

// fileWriter writes a test's input files into dir: write(name, text) is
// the file's path.
func fileWriter(t *testing.T, dir string) func(name, text string) string {
	return func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
}
