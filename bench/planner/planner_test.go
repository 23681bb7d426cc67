package planner

import (
	"encoding/json"
	"fmt"
	"math"
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
		case "ptc", "pte", "spc":
			// Whole-workflow machines are outside exhaustive's decision
			// space: they may undercut it (pte pays no network at all).
		default:
			if r.Compared > 0 && r.MeanRel < 1-1e-9 {
				t.Errorf("%s cheaper than the optimum: %+v", r.Strategy, r)
			}
		}
	}
}

// TestBenchPlannerReports: --report table5 gives one row per setup and
// strategy on the setup's own targets, exhaustive at 1.0 and jellybean at or
// above it; --report figure8 one row per setup, throughput and strategy.
func TestBenchPlannerReports(t *testing.T) {
	stdout, stderr, code := runTierflow(t, "bench", "planner", "--report", "table5", "--setups", "../../examples/setups", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var t5 []table5Row
	if err := json.Unmarshal([]byte(stdout), &t5); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if want := 8 * len(benchStrategies); len(t5) != want {
		t.Fatalf("table5: want %d rows, got %d", want, len(t5))
	}
	for _, r := range t5 {
		if r.Feasible && math.Abs(r.Total-(r.Compute+r.Network)) > 1e-9 {
			t.Errorf("table5: total is not compute + network: %+v", r)
		}
		switch r.Strategy {
		case "exhaustive":
			if !r.Feasible || r.VsOptimum != 1 {
				t.Errorf("table5: exhaustive on a Table-4 target: %+v", r)
			}
		case "jellybean", "auto", "best-fit", "first-fit", "most-accurate":
			if r.Feasible && r.VsOptimum < 1-1e-9 {
				t.Errorf("table5: %s below the optimum: %+v", r.Strategy, r)
			}
		}
	}
	stdout, stderr, code = runTierflow(t, "bench", "planner", "--report", "figure8", "--setups", "../../examples/setups", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var f8 []figure8Row
	if err := json.Unmarshal([]byte(stdout), &f8); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if want := 8 * 5 * len(benchStrategies); len(f8) != want {
		t.Fatalf("figure8: want %d rows, got %d", want, len(f8))
	}
	_, stderr, code = runTierflow(t, "bench", "planner", "--report", "table7", "--setups", "../../examples/setups")
	if code != 2 || !strings.Contains(stderr, `unknown --report "table7"`) {
		t.Errorf("--report table7: exit %d, %s", code, stderr)
	}
}
