package optimize_test

import (
	"context"
	"testing"
	"time"

	"github.com/tierflow/tierflow/planner/optimize"
)

// BenchmarkStrategies times each strategy on the reference problem, on
// synthetic 30-worker setups (2 tiers VQA with the reference profiles, 3 tiers
// AICity) and on the two 30-worker Table-4 setups as the planner lowers them.
func BenchmarkStrategies(b *testing.B) {
	ref := refProblem(b)
	problems := []struct {
		name string
		p    *optimize.Problem
	}{
		{"reference", ref},
		{"vqa-xlarge-30w", vqaXLarge(ref, 100, 57)},
		{"aicity-xlarge-30w-3tier", aicityXLarge(20, 70)},
	}
	for _, name := range []string{"vqa-xlarge", "aicity-xlarge"} {
		problems = append(problems, struct {
			name string
			p    *optimize.Problem
		}{"table4-" + name, loadSetups(b)[name]})
	}
	reg := optimize.DefaultRegistry()
	for _, pr := range problems {
		for _, name := range reg.Names() {
			b.Run(pr.name+"/"+name, func(b *testing.B) {
				var pl *optimize.Plan
				for b.Loop() {
					var err error
					pl, err = reg.Optimize(context.Background(), name, pr.p, optimize.Options{TimeBudget: 10 * time.Second})
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(pl.TotalCost, "cost")
				if pl.GaveUp {
					b.ReportMetric(1, "gaveup")
				}
			})
		}
	}
}

func TestLargeSetupsSolveExactly(t *testing.T) {
	ref := refProblem(t)
	for _, p := range []*optimize.Problem{vqaXLarge(ref, 100, 57), aicityXLarge(20, 70)} {
		au, err := optimize.Auto{}.Optimize(context.Background(), p, optimize.Options{})
		if err != nil {
			t.Fatal(err)
		}
		jb, err := optimize.JellyBean{}.Optimize(context.Background(), p, optimize.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !au.Feasible || !au.Optimal || au.GaveUp {
			t.Fatalf("%s: auto feasible %v optimal %v gave up %v (%s)", p.Name, au.Feasible, au.Optimal, au.GaveUp, au.Reason)
		}
		if jb.Feasible && au.TotalCost > jb.TotalCost+1e-9 {
			t.Errorf("%s: auto %v worse than jellybean %v", p.Name, au.TotalCost, jb.TotalCost)
		}
		t.Logf("%s: auto %.4f (optimal, %.1f ms), jellybean %.4f (%.2f ms)", p.Name, au.TotalCost, au.OptimizerMs, jb.TotalCost, jb.OptimizerMs)
	}
}
