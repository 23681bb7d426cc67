package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRunsThePlannedVariants: `run` runs the variant the planner chose
// for the query's objectives (the cheapest meeting ACCURACY >= 87 is
// mlp-small, not the most accurate cnn), locally and on the cluster; an
// accuracy no variant reaches, or a rate no placement sustains, fails the
// query (exit 1) at that objective, naming the best reachable, instead of
// running another plan.
func TestRunRunsThePlannedVariants(t *testing.T) {
	dir := t.TempDir()
	feasible := filepath.Join(dir, "feasible.sql")
	infeasible := filepath.Join(dir, "infeasible.sql")
	const sel = "SELECT id, c.label FROM labelled CROSS JOIN LATERAL classify(image) AS c(label, score)\n"
	os.WriteFile(feasible, []byte(sel+"WITH (ACCURACY >= 87);\n"), 0o644)
	os.WriteFile(infeasible, []byte(sel+"WITH (ACCURACY >= 95);\n"), 0o644)
	// The accuracy is reachable, the rate is not: the error is at THROUGHPUT.
	fast := filepath.Join(dir, "fast.sql")
	os.WriteFile(fast, []byte(sel+"WITH (ACCURACY >= 87, THROUGHPUT >= 1000000000 PER SECOND);\n"), 0o644)
	files := []string{"--catalog", "../../examples/fashion/catalog.yaml", "--infra", "../../examples/fashion/infra.yaml", "--format", "csv"}
	for _, mode := range []string{"--local", "--local=false"} {
		args := append(append([]string{"run", mode}, files...), feasible)
		code, out, errs := runCLI(t, "", args...)
		if code != exitOK || strings.Count(out, "\n") != 2001 {
			t.Fatalf("%s feasible: exit %d, %d lines: %s", mode, code, strings.Count(out, "\n"), errs)
		}
		if !strings.Contains(errs, "-- model classify: variant mlp-small ") {
			t.Fatalf("%s feasible: not the planned variant:\n%s", mode, errs)
		}
		args = append(append([]string{"run", mode}, files...), infeasible)
		code, out, errs = runCLI(t, "", args...)
		if code != exitFailure || out != "" || strings.Contains(errs, "-- model classify") ||
			!strings.Contains(errs, "infeasible.sql:2:7: no plan meets the objectives: accuracy target 95") ||
			!strings.Contains(errs, "highest reachable accuracy is 90.27") {
			t.Fatalf("%s infeasible: exit %d, stdout %q\n%s", mode, code, out, errs)
		}
		args = append(append([]string{"run", mode}, files...), fast)
		code, out, errs = runCLI(t, "", args...)
		if code != exitFailure || out != "" || !strings.Contains(errs, "fast.sql:2:23: no plan meets the objectives: throughput 1e+09 items/s cannot be sustained") {
			t.Fatalf("%s throughput: exit %d, stdout %q\n%s", mode, code, out, errs)
		}
	}
}
