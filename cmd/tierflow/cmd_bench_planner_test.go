package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestBenchPlannerQuick runs the planner benchmark on each setup's own targets
// and checks its rows: exhaustive is its own yardstick, auto is never worse
// than it, and every strategy reports a feasibility share and times.
func TestBenchPlannerQuick(t *testing.T) {
	stdout, stderr, code := runTierflow(t, "bench", "planner", "--quick", "--setups", "../../examples/setups", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rows []plannerBenchRow
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	// Not a terminal: plain progress lines on stderr, one plan per setup and strategy.
	if want := fmt.Sprintf("planning: %d items, done in", 8*len(benchStrategies)); !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks the progress line %q:\n%s", want, stderr)
	}
	if want := (8 + 1) * len(benchStrategies); len(rows) != want {
		t.Fatalf("want %d rows, got %d", want, len(rows))
	}
	for _, r := range rows {
		if r.Cases == 0 || r.Feasible < 0 || r.Feasible > 1 || r.P95Ms < r.P50Ms {
			t.Errorf("bad row %+v", r)
		}
		switch r.Strategy {
		case "exhaustive":
			if r.Compared > 0 && (r.MeanRel != 1 || r.WorstRel != 1) {
				t.Errorf("exhaustive relative to itself: %+v", r)
			}
		case "auto":
			if r.Feasible != 1 || r.WorstRel > 1+1e-9 {
				t.Errorf("auto must be feasible and no worse than exhaustive on the Table 4 targets: %+v", r)
			}
		default:
			if r.Compared > 0 && r.MeanRel < 1-1e-9 {
				t.Errorf("%s cheaper than the optimum: %+v", r.Strategy, r)
			}
		}
	}
}
