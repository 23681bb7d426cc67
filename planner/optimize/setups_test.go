package optimize_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/planner/optimize"
)

// The eight Table-4 setups as the planner lowers them (snapshots of
// examples/setups through planner/lower, as JSON Problems).
func loadSetups(t testing.TB) map[string]*optimize.Problem {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "setups", "*.json"))
	if err != nil || len(files) != 8 {
		t.Fatalf("setups: %v %v", files, err)
	}
	out := map[string]*optimize.Problem{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var p optimize.Problem
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = &p
	}
	return out
}

// TestSetupsAutoIsExact: on every Table-4 setup auto proves its plan optimal,
// exhaustive agrees, and auto is never worse than jellybean.
func TestSetupsAutoIsExact(t *testing.T) {
	ctx := context.Background()
	for name, p := range loadSetups(t) {
		au, err := optimize.Auto{}.Optimize(ctx, p, optimize.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ex, err := optimize.Exhaustive{}.Optimize(ctx, p, optimize.Options{})
		if err != nil {
			t.Fatal(err)
		}
		jb, err := optimize.JellyBean{}.Optimize(ctx, p, optimize.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !au.Feasible || !au.Optimal || !ex.Optimal || math.Abs(au.TotalCost-ex.TotalCost) > 1e-9 {
			t.Errorf("%s: auto %v (feasible %v optimal %v), exhaustive %v (optimal %v)", name, au.TotalCost, au.Feasible, au.Optimal, ex.TotalCost, ex.Optimal)
		}
		if !jb.Feasible {
			t.Errorf("%s: jellybean found no plan: %s", name, jb.Reason)
		}
		if jb.Feasible && au.TotalCost > jb.TotalCost+1e-9 {
			t.Errorf("%s: auto %v worse than jellybean %v", name, au.TotalCost, jb.TotalCost)
		}
		t.Logf("%-14s auto %.4f (%.2f ms)  exhaustive %.2f ms  jellybean %.4f (%.2f ms)", name, au.TotalCost, au.OptimizerMs, ex.OptimizerMs, jb.TotalCost, jb.OptimizerMs)
	}
}
