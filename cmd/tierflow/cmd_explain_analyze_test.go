package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/runtime/analyze"
	"github.com/tierflow/tierflow/runtime/ortlib"
)

// explain --analyze runs the fashion cascade on the embedded cluster of
// examples/fashion/infra.yaml (found next to the query) for two seconds and
// prints the run against the plan as JSON.
func TestExplainAnalyzeJSON(t *testing.T) {
	if _, err := ortlib.Find(""); err != nil {
		t.Skipf("ONNX Runtime library not set up (scripts/setup.sh): %v", err)
	}
	out, errs, code := runTierflow(t, "explain", "--analyze", "--duration", "2s", "--format", "json", filepath.Join("..", "..", "examples", "fashion", "analyze.sql"))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r analyze.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if r.State != "finished" || len(r.Checks) < 3 || r.Checks[0].What != "throughput" || r.Checks[0].Estimated != 100 {
		t.Fatalf("report %+v", r)
	}
	if !strings.Contains(errs, "embedded cluster: 7 workers") {
		t.Errorf("stderr should name the cluster of infra.yaml:\n%s", errs)
	}
}

// EXPLAIN ANALYZE needs the cluster: with --local it is bad input at the
// statement; a bad option is bad input at the option.
func TestExplainAnalyzeBadInput(t *testing.T) {
	q := filepath.Join(t.TempDir(), "q.sql")
	os.WriteFile(q, []byte("CREATE STREAM s (id BIGINT) FROM FILE 'x.csv';\nEXPLAIN ANALYZE SELECT id FROM s;\n"), 0o644)
	_, errs, code := runTierflow(t, "run", "--local", q)
	if code != exitBadInput || !strings.Contains(errs, "q.sql:2:1: EXPLAIN ANALYZE holds a run on the cluster") {
		t.Fatalf("--local: exit %d: %s", code, errs)
	}
	_, errs, code = runTierflow(t, "explain", "--analyze", "--format", "dot", q)
	if code != exitBadInput || !strings.Contains(errs, "want text or json") {
		t.Fatalf("--format dot: exit %d: %s", code, errs)
	}
}
