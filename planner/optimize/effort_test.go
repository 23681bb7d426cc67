package optimize

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSweepSearchEffort guards the exact search's pruning (dominance, bounds)
// without timing anything: over the bench-planner target sweep of every
// Table-4 setup, auto's branch and bound (seeded with jellybean's plan) visits
// at most a few thousand nodes. Before dominance pruning aicity-xlarge needed
// up to 11,700 on a feasible target; a target proved infeasible (no incumbent,
// nothing to prune on cost) may take more.
func TestSweepSearchEffort(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "setups", "*.json"))
	if err != nil || len(files) != 8 {
		t.Fatalf("setups: %v %v", files, err)
	}
	const maxFeasible, maxInfeasible = 6000, 30000
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var p0 Problem
		if err := json.Unmarshal(data, &p0); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		worst := 0
		for _, tf := range []float64{0.5, 0.75, 1, 1.25, 1.5} {
			for _, da := range []float64{-2, -1, 0, 1} {
				p := p0
				p.Objectives.Throughput *= tf
				p.Objectives.MinAccuracy = Float(*p0.Objectives.MinAccuracy + da)
				in, err := newInstance(&p, nil)
				if err != nil {
					t.Fatal(err)
				}
				b := newBnB(context.Background(), in)
				if inc := in.jellybean(Options{}.withDefaults()); inc != nil {
					if pl := in.evaluate(*inc); pl.Feasible {
						b.best = pl.TotalCost
					}
				}
				b.computeLambda()
				b.run(time.Now().Add(time.Minute))
				limit := maxFeasible
				if math.IsInf(b.best, 1) {
					limit = maxInfeasible
				}
				if b.gaveUp || b.nodes > limit {
					t.Errorf("%s at %gx throughput, %+g accuracy: %d nodes (limit %d), gave up %v", name, tf, da, b.nodes, limit, b.gaveUp)
				}
				worst = max(worst, b.nodes)
			}
		}
		t.Logf("%-14s worst %5d nodes", name, worst)
	}
}
