package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestObjectivesHoldInEveryMode: one rule for objectives. A query whose
// ACCURACY no plan reaches exits 1 at the objective's position, naming the
// best reachable (84.19), whichever way it runs: run on the cluster, run
// --local, INSERT INTO a file sink (which the cluster runs in the client),
// the REPL, and explain (after printing the plan). Before, --local and the
// INSERT ran the model anyway with exit 0 (the planner could not plan a
// model without a latency profile), and explain exited 0.
func TestObjectivesHoldInEveryMode(t *testing.T) {
	model, err := filepath.Abs("../../examples/fashion/models/logreg.onnx")
	if err != nil {
		t.Fatal(err)
	}
	data, err := filepath.Abs("../../examples/fashion/data/shelf.arrow")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out.csv")
	head := `CREATE MODEL classify TASK 'image-classification'
  INPUTS (image TENSOR(FLOAT, 1, 28, 28))
  OUTPUTS (label VARCHAR, score FLOAT)
  VARIANTS (logreg FROM '` + model + `' WITH (accuracy = 84.19));
CREATE STREAM shelf (id BIGINT, ts TIMESTAMP, image TENSOR(FLOAT, 1, 28, 28), true_label VARCHAR, true_group VARCHAR)
  FROM FILE '` + data + `' FORMAT ARROW;
CREATE SINK out TO FILE '` + out + `' FORMAT CSV;
`
	query := "SELECT id, c.label FROM shelf CROSS JOIN LATERAL classify(image) AS c(label, score)\nWITH (ACCURACY >= 99);\n"
	scripts := map[string]string{
		"select.sql": head + query,
		"insert.sql": head + "INSERT INTO out\n" + query,
	}
	for name, src := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args []string
		at   string
	}{
		{[]string{"run", "select.sql"}, "select.sql:9:7: "},
		{[]string{"run", "--local", "select.sql"}, "select.sql:9:7: "},
		{[]string{"run", "insert.sql"}, "insert.sql:10:7: "},
		{[]string{"run", "--local", "insert.sql"}, "insert.sql:10:7: "},
		{[]string{"explain", "select.sql"}, "select.sql:9:7: "},
		{[]string{"repl", "-f", "select.sql"}, "select.sql:9:7: "},
	} {
		args := append(tc.args[:len(tc.args)-1:len(tc.args)-1], filepath.Join(dir, tc.args[len(tc.args)-1]))
		code, stdout, errs := runCLI(t, "", args...)
		if code != exitFailure {
			t.Errorf("%v: exit %d, want 1\n%s%s", tc.args, code, stdout, errs)
		}
		if !strings.Contains(errs, tc.at+"no plan meets the objectives: accuracy target 99") || !strings.Contains(errs, "84.19") {
			t.Errorf("%v: stderr does not give the objective's position (%s) and the best reachable (84.19):\n%s", tc.args, tc.at, errs)
		}
		if n := strings.Count(errs, "no plan meets the objectives"); n != 1 {
			t.Errorf("%v: the error printed %d times, want once:\n%s", tc.args, n, errs)
		}
		if tc.args[0] != "explain" && strings.Contains(stdout, "Ankle boot") {
			t.Errorf("%v: the query ran:\n%.300s", tc.args, stdout)
		}
		if b, err := os.ReadFile(out); err == nil && len(b) > 0 {
			t.Errorf("%v: the INSERT wrote %d bytes", tc.args, len(b))
		}
	}
}

// TestMissingModelFileBlamesItsDeclaration: a model file that is not there
// is reported once, at the variant that names it (the CREATE MODEL, or the
// catalog entry), not at the call that uses it; it printed twice on the
// cluster (the query's summary line and the error) at the call.
func TestMissingModelFileBlamesItsDeclaration(t *testing.T) {
	data, err := filepath.Abs("../../examples/fashion/data/shelf.arrow")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "q.sql")
	src := `CREATE MODEL classify TASK 'image-classification'
  INPUTS (image TENSOR(FLOAT, 1, 28, 28))
  OUTPUTS (label VARCHAR, score FLOAT)
  VARIANTS (small FROM 'missing.onnx' WITH (accuracy = 80));
CREATE STREAM shelf (id BIGINT, ts TIMESTAMP, image TENSOR(FLOAT, 1, 28, 28)) FROM FILE '` + data + `' FORMAT ARROW;
SELECT id, c.label FROM shelf CROSS JOIN LATERAL classify(image) AS c(label, score);
`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"run", "--local", script}, {"run", script}} {
		code, _, errs := runCLI(t, "", args...)
		if code != exitBadInput {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, errs)
		}
		if n := strings.Count(errs, "file missing.onnx not found"); n != 1 {
			t.Errorf("%v: the missing file is reported %d times, want once:\n%s", args, n, errs)
		}
		if !strings.Contains(errs, "q.sql:4:13: inference: cannot run model: variant small: file missing.onnx not found") {
			t.Errorf("%v: not blamed on the variant that names the file (q.sql:4:13):\n%s", args, errs)
		}
	}
}
