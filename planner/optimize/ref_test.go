package optimize_test

import (
	"context"
	"testing"

	"github.com/tierflow/tierflow/planner/jellybean"
	"github.com/tierflow/tierflow/planner/optimize"
)

func refProblem(t testing.TB) *optimize.Problem {
	t.Helper()
	pr, err := jellybean.Load("../jellybean/testdata/jellybean-vqa-medium")
	if err != nil {
		t.Fatal(err)
	}
	p, err := pr.Problem("p75")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReferenceAll(t *testing.T) {
	p := refProblem(t)
	reg := optimize.DefaultRegistry()
	for _, n := range reg.Names() {
		pl, err := reg.Optimize(context.Background(), n, p, optimize.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s feasible=%v total=%.6f compute=%.4f net=%.6f acc=%.2f ms=%.2f opt=%v reason=%s", n, pl.Feasible, pl.TotalCost, pl.ComputeCost, pl.NetworkCost, pl.Accuracy, pl.OptimizerMs, pl.Optimal, pl.Reason)
		for _, op := range pl.Operators {
			var ws []string
			for _, w := range op.Workers {
				ws = append(ws, w.Name)
			}
			t.Logf("   %s %s %v", op.Name, op.Variant, ws)
		}
	}
}
