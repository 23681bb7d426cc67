package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestExplainPlansOnRunsDefaultInfrastructure: without --infra (and no
// infra.yaml next to the query), explain and the REPL's EXPLAIN plan on the
// workers `tierflow run` starts, instead of refusing for want of an
// infrastructure.
func TestExplainPlansOnRunsDefaultInfrastructure(t *testing.T) {
	const query = "../../examples/streaming/query.sql"
	code, _, errs := runCLI(t, "", "run", query)
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s", code, errs)
	}
	m := regexp.MustCompile(`-- embedded cluster: \d+ workers \(([^)]*)\)`).FindStringSubmatch(errs)
	if m == nil {
		t.Fatalf("run names no workers:\n%s", errs)
	}
	runWorkers := map[string]bool{}
	for _, w := range strings.Split(m[1], ", ") {
		runWorkers[strings.Fields(w)[0]] = true
	}
	code, plan, errs := runCLI(t, "", "explain", query)
	if code != exitOK {
		t.Fatalf("explain: exit %d\n%s", code, errs)
	}
	placed := regexp.MustCompile(`worker (\S+) \(`).FindAllStringSubmatch(plan, -1)
	if len(placed) == 0 {
		t.Fatalf("plan places nothing:\n%s", plan)
	}
	for _, p := range placed {
		if !runWorkers[p[1]] {
			t.Errorf("explain placed work on %s, which run does not start (%v):\n%s", p[1], runWorkers, plan)
		}
	}
	code, out, errs := runCLI(t, "", "repl", "--format", "csv", "-c", "CREATE STREAM s (k INT, ts TIMESTAMP) FROM FILE 's.csv' FORMAT CSV; SHOW TIERS; EXPLAIN SELECT k FROM s;")
	if code != exitOK || !strings.Contains(out, "tier,locations\nedge,1\nhub,1\ncloud,1\n") || !strings.Contains(out, "Plan (strategy auto)") {
		t.Fatalf("repl: exit %d\n%s\n%s", code, out, errs)
	}
}
