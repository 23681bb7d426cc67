package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `tierflow run --local`, `tierflow run` on a cluster and the REPL run their
// statements through one interpreter (operators/session). Before they did,
// each had its own, and they differed in the ways these tests hold: a
// statement now means the same wherever it runs, as a script means the same
// in DuckDB's CLI (`.read`) as typed, and in Flink's SQL client as submitted.
// Only presentation stays each front end's (run's --format tables, the
// REPL's psql-style tables and command tags), and what an engine can run
// (EXPLAIN ANALYZE and STOP QUERY need a cluster).

// fashionScript writes a script over the fashion example's catalog (whose
// files resolve next to it).
func fashionScript(t *testing.T, name, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var fashionFlags = []string{"--catalog", "../../examples/fashion/catalog.yaml", "--infra", "../../examples/fashion/infra.yaml", "--format", "csv"}

// The REPL runs the variant the query's plan chose, as `run` does in both
// modes. (Before, the REPL ran every model call's most accurate variant
// whatever the objectives: here cnn's 1817 right of 2000 where the plan for
// ACCURACY >= 84 runs logreg, 1704.)
func TestInterpreterREPLRunsThePlannedVariant(t *testing.T) {
	path := fashionScript(t, "zz_interp_plan.sql", "SELECT count(*) AS n, sum(CASE WHEN c.label = s.true_label THEN 1 ELSE 0 END) AS correct\n"+
		"FROM labelled AS s CROSS JOIN LATERAL classify(s.image) AS c(label, score)\nWITH (ACCURACY >= 84);\n")
	outs := map[string]string{}
	for name, args := range map[string][]string{
		"run --local": append([]string{"run", "--local", path}, fashionFlags...),
		"run":         append([]string{"run", path}, fashionFlags...),
		"repl":        append([]string{"repl", "-f", path}, fashionFlags...),
	} {
		code, out, errs := runCLI(t, "", args...)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", name, code, errs)
		}
		outs[name] = out
	}
	if want := "n,correct\n2000,1704\n"; outs["run --local"] != want {
		t.Fatalf("run --local printed %q, want logreg's %q", outs["run --local"], want)
	}
	for name, out := range outs {
		if out != outs["run --local"] {
			t.Errorf("%s printed %q, run --local %q", name, out, outs["run --local"])
		}
	}
}

// A query whose objectives no plan meets fails in the REPL as in `run`:
// exit 1, naming the objective at its position. (Before, the REPL ran it.)
func TestInterpreterObjectivesNoPlanMeets(t *testing.T) {
	path := fashionScript(t, "zz_interp_infeasible.sql", "SELECT count(*) AS n\nFROM labelled AS s CROSS JOIN LATERAL classify(s.image) AS c(label, score)\nWITH (ACCURACY >= 99);\n")
	for _, args := range [][]string{
		append([]string{"run", "--local", path}, fashionFlags...),
		append([]string{"repl", "-f", path}, fashionFlags...),
	} {
		code, out, errs := runCLI(t, "", args...)
		if code != exitFailure || out != "" || !strings.Contains(errs, "zz_interp_infeasible.sql:3:7: no plan meets the objectives: accuracy target 99") {
			t.Errorf("%s: exit %d, stdout %q, stderr:\n%s\nwant exit 1 naming the objective", args[0], code, out, errs)
		}
	}
}

// STOP QUERY without a cluster is bad input everywhere (exit 2), with one
// message. (Before, `run --local` failed with exit 1.)
func TestInterpreterStopQueryNeedsACluster(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stop.sql")
	if err := os.WriteFile(path, []byte("STOP QUERY q1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"run", "--local", path}, {"repl", "-f", path}} {
		code, _, errs := runCLI(t, "", args...)
		if code != exitBadInput || !strings.Contains(errs, "stop.sql:1:1: STOP QUERY stops a query running on a cluster") {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit 2 saying STOP QUERY needs a cluster", args, code, errs)
		}
	}
}

// An INSERT prints no result table: its rows went to its sink. (Before, on a
// cluster it printed an empty table, "(0 rows)".) A SELECT that fails
// before a row prints none either: the error is all there is to say.
// (Before, `run --local` printed "(0 rows)" above the error.)
func TestInterpreterPrintsNoEmptyTables(t *testing.T) {
	dir := t.TempDir()
	readings, err := filepath.Abs(filepath.Join("..", "..", "examples", "streaming", "readings.csv"))
	if err != nil {
		t.Fatal(err)
	}
	insert := filepath.Join(dir, "insert.sql")
	if err := os.WriteFile(insert, []byte("CREATE TABLE t (sensor INT, ts TIMESTAMP, temperature DOUBLE) FROM FILE '"+readings+"' FORMAT CSV;\n"+
		"CREATE SINK hot TO NATS 'hot.readings' FORMAT JSON;\nINSERT INTO hot SELECT sensor FROM t WHERE temperature > 39.8;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.csv"), []byte("sensor,ts,temperature\n1,2024-05-01 08:00:00,20.5\nx,2024-05-01 08:00:01,21\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fail := filepath.Join(dir, "fail.sql")
	if err := os.WriteFile(fail, []byte("CREATE TABLE t (sensor INT, ts TIMESTAMP, temperature DOUBLE) FROM FILE 'bad.csv' FORMAT CSV;\nSELECT sensor FROM t;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"run", insert}, exitOK},
		{[]string{"run", "--local", insert}, exitOK},
		{[]string{"run", "--local", fail}, exitBadInput},
		{[]string{"run", fail}, exitBadInput},
	} {
		code, out, errs := runCLI(t, "", c.args...)
		if code != c.code || out != "" {
			t.Errorf("%v: exit %d (want %d), stdout %q (want none); stderr:\n%s", c.args, code, c.code, out, errs)
		}
	}
}
