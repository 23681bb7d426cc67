package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/runtime/analyze"
	"github.com/tierflow/tierflow/runtime/ortlib"
)

// repl runs `tierflow ARGS...` in-process with stdin, as a pipe would.
func replCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// streamScript writes a CSV stream, a CSV table and a script declaring them
// into a temporary directory and returns the script's path.
func streamScript(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"readings.csv": "sensor,ts,temperature\n1,2024-05-01 08:00:00,20.5\n2,2024-05-01 08:00:01,26.0\n1,2024-05-01 08:00:02,27.5\n2,2024-05-01 08:00:12,21.0\n",
		"sensors.csv":  "sensor,site\n1,north\n2,south\n",
		"setup.sql": `-- paths are relative to this script, as for tierflow run
CREATE STREAM readings (sensor INT, ts TIMESTAMP, temperature DOUBLE)
  FROM FILE 'readings.csv' FORMAT CSV;
CREATE TABLE sensors (sensor INT, site VARCHAR) FROM FILE 'sensors.csv' FORMAT CSV;
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "setup.sql")
}

func TestReplRunsQueriesWithTheLocalExecutor(t *testing.T) {
	setup := streamScript(t)
	code, out, errs := replCLI(t, "", "repl", "-f", setup, "-c",
		"SELECT s.site, r.temperature FROM readings AS r JOIN sensors AS s ON r.sensor = s.sensor WHERE r.temperature > 25;")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	for _, want := range []string{"| site  | temperature |", "| south |          26 |", "| north |        27.5 |", "(2 rows)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+errs, "tierflow>") || strings.Contains(out+errs, "\x1b[") {
		t.Errorf("prompt or colour outside a terminal:\n%s%s", out, errs)
	}
}

func TestReplPipedStatementsAndFormats(t *testing.T) {
	setup := streamScript(t)
	stdin := "\\i " + setup + "\n\\format jsonl\nSELECT sensor,\n       temperature\nFROM readings\nLIMIT 2;\n"
	code, out, errs := replCLI(t, stdin, "repl")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 JSON lines, got:\n%s", out)
	}
	for _, l := range lines {
		var row map[string]any
		if err := json.Unmarshal([]byte(l), &row); err != nil || row["sensor"] == nil || row["temperature"] == nil {
			t.Errorf("line %q: %v", l, err)
		}
	}

	code, out, errs = replCLI(t, "", "repl", "--format", "csv", "-f", setup, "-c", "SHOW STREAMS;", "-c", "SHOW TABLES")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if !strings.HasPrefix(out, "name,columns,source,rate\nreadings,") || !strings.Contains(out, "\nname,columns,path,format\nsensors,") {
		t.Errorf("csv output:\n%s", out)
	}
}

func TestReplBadInputExitsTwoWithCaret(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "bad.sql")
	if err := os.WriteFile(script, []byte("SHOW MODELS;\n\nSELECT a\n  FORM t;\nSHOW SINKS;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := replCLI(t, "", "repl", "-f", script)
	if code != exitBadInput {
		t.Fatalf("exit %d, want %d\n%s", code, exitBadInput, errs)
	}
	if !strings.Contains(errs, script+":4:3: ") || !strings.Contains(errs, "\n  FORM t;\n  ^") {
		t.Errorf("want %s:4:3 and a caret:\n%s", script, errs)
	}
	if strings.Contains(out, "kind,target") || strings.Count(out, "(0 rows)") != 1 {
		t.Errorf("the script should stop at the error:\n%s", out)
	}

	cases := [][]string{
		{"repl", "-c", "SELECT x FROM nowhere;"},
		{"repl", "-c", `\nope`},
		{"repl", "-c", "SET planner.beam_width = 0;"},
		{"repl", "--format", "xml", "-c", "SHOW MODELS;"},
		{"repl", "-f", filepath.Join(dir, "missing.sql")},
		{"repl", "--catalog", filepath.Join(dir, "missing.yaml"), "-c", "SHOW MODELS;"},
	}
	for _, args := range cases {
		if code, _, errs := replCLI(t, "", args...); code != exitBadInput {
			t.Errorf("%q: exit %d, want %d\n%s", args, code, exitBadInput, errs)
		}
	}
}

func TestReplRuntimeFailureExitsOne(t *testing.T) {
	dir := t.TempDir()
	// A query that cannot reach its NATS server fails while running (exit
	// 1); a file that is not there, or a row that does not fit, is bad
	// input (exit 2), as in every command.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "nats://" + l.Addr().String()
	l.Close()
	code, _, errs := replCLI(t, "", "repl", "--nats", dead, "-c",
		"CREATE STREAM s (a INT) FROM NATS 'x.y' FORMAT JSON; SELECT a FROM s LIMIT 1;")
	if code != exitFailure || !strings.Contains(errs, dead) {
		t.Fatalf("unreachable NATS: exit %d, want %d\n%s", code, exitFailure, errs)
	}
	data := filepath.Join(dir, "bad.csv")
	os.WriteFile(data, []byte("a\n1\nnot a number\n"), 0o644)
	code, _, errs = replCLI(t, "", "repl", "-c",
		"CREATE STREAM bad (a INT) FROM FILE '"+data+"' FORMAT CSV; SELECT a FROM bad;")
	if code != exitBadInput || !strings.Contains(errs, "bad.csv:3") {
		t.Fatalf("bad row: exit %d, want %d\n%s", code, exitBadInput, errs)
	}
	code, _, errs = replCLI(t, "", "repl", "-c",
		"CREATE STREAM gone (a INT) FROM FILE '"+filepath.Join(dir, "gone.csv")+"' FORMAT CSV; SELECT a FROM gone;")
	if code != exitBadInput || !strings.Contains(errs, "gone.csv") {
		t.Fatalf("missing file: exit %d, want %d\n%s", code, exitBadInput, errs)
	}
}

func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string]string{
		"bash": "__start_tierflow",
		"zsh":  "#compdef tierflow",
	} {
		code, out, errs := replCLI(t, "", "completion", shell)
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("completion %s: exit %d, %q missing\n%s", shell, code, want, errs)
		}
	}
	// The scripts call back into the binary; that protocol must list our
	// subcommands and flags.
	_, out, _ := replCLI(t, "", "__complete", "re")
	if !strings.Contains(out, "repl\t") {
		t.Errorf("__complete re lacks repl:\n%s", out)
	}
	_, out, _ = replCLI(t, "", "__complete", "repl", "--")
	for _, flag := range []string{"--file", "--command", "--catalog", "--format"} {
		if !strings.Contains(out, flag) {
			t.Errorf("__complete repl -- lacks %s:\n%s", flag, out)
		}
	}
}

func TestReplInsertWritesTheSinkNotATable(t *testing.T) {
	setup := streamScript(t)
	out := filepath.Join(t.TempDir(), "hot.jsonl")
	code, stdout, errs := replCLI(t, "", "repl", "-f", setup, "-c",
		"CREATE SINK hot TO FILE '"+out+"' FORMAT JSON; INSERT INTO hot SELECT sensor, temperature FROM readings WHERE temperature > 25;")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if stdout != "" {
		t.Errorf("INSERT printed results:\n%s", stdout)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 2 {
		t.Errorf("sink holds %d rows, want 2:\n%s", n, b)
	}
}

func TestReplRunsModels(t *testing.T) {
	if _, err := ortlib.Find(""); err != nil {
		t.Skipf("ONNX Runtime library not set up (scripts/setup.sh): %v", err)
	}
	script := filepath.Join("..", "..", "examples", "fashion", "classify.sql")
	code, out, errs := replCLI(t, "", "repl", "--format", "csv", "-c", `\o `+os.DevNull+"\n\\i "+script+"\n\\o\n"+
		"SELECT s.id, c.label FROM shelf AS s CROSS JOIN LATERAL classify(s.image) AS c(label, score) LIMIT 3;")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	// The model's files are found relative to the script that declared it.
	if !strings.HasPrefix(out, "id,label\n0,Ankle boot\n1,Pullover\n") || strings.Count(out, "\n") != 4 {
		t.Errorf("output:\n%s", out)
	}
	if !strings.Contains(errs, "model classify: variant") {
		t.Errorf("no model runtime line:\n%s", errs)
	}
}

// EXPLAIN ANALYZE in the REPL runs on an embedded cluster of --infra with the
// session's catalog: here the fashion catalog (its data and models named
// relative to itself, not to the working directory).
func TestReplExplainAnalyze(t *testing.T) {
	if _, err := ortlib.Find(""); err != nil {
		t.Skipf("ONNX Runtime library not set up (scripts/setup.sh): %v", err)
	}
	dir := filepath.Join("..", "..", "examples", "fashion")
	code, out, errs := replCLI(t, "", "repl", "--catalog", filepath.Join(dir, "catalog.yaml"), "--infra", filepath.Join(dir, "infra.yaml"), "-c",
		"EXPLAIN ANALYZE (DURATION 1, FORMAT json) SELECT count(*) AS n FROM labelled AS s CROSS JOIN LATERAL classify(s.image) AS c(label, score) WITH (ACCURACY >= 84, THROUGHPUT >= 100 PER SECOND);")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	var rep analyze.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.State != "finished" || len(rep.Sources) != 1 || rep.Sources[0].Rows == 0 || rep.Checks[0].Estimated != 100 {
		t.Fatalf("report %+v", rep)
	}
}
