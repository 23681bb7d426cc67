package optimize_test

import (
	"context"
	"math"
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

// The prototype's published total on the reference inputs (README).
const publishedTotal = 7.5088

func TestReferenceAutoBeatsPrototypeAndIsOptimal(t *testing.T) {
	p := refProblem(t)
	ctx := context.Background()
	auto, err := optimize.Auto{}.Optimize(ctx, p, optimize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := optimize.Exhaustive{}.Optimize(ctx, p, optimize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pl := range []*optimize.Plan{auto, ex} {
		if !pl.Feasible || pl.Accuracy < 56.0 || pl.Throughput < 40-1e-9 {
			t.Fatalf("%s: feasible %v accuracy %v throughput %v", pl.Strategy, pl.Feasible, pl.Accuracy, pl.Throughput)
		}
		if pl.TotalCost >= publishedTotal {
			t.Errorf("%s: total %v not below the prototype's %v", pl.Strategy, pl.TotalCost, publishedTotal)
		}
		if !pl.Optimal || pl.GaveUp {
			t.Errorf("%s: optimal %v gave up %v", pl.Strategy, pl.Optimal, pl.GaveUp)
		}
	}
	if math.Abs(auto.TotalCost-ex.TotalCost) > 1e-9 {
		t.Errorf("auto %v != exhaustive %v", auto.TotalCost, ex.TotalCost)
	}
	t.Logf("optimum %.6f (compute %.4f, network %.7f), prototype %.4f", ex.TotalCost, ex.ComputeCost, ex.NetworkCost, publishedTotal)
	for _, op := range ex.Operators {
		var ws []string
		for _, w := range op.Workers {
			ws = append(ws, w.Name)
		}
		t.Logf("  %s=%s on %v", op.Name, op.Variant, ws)
	}
}

// TestReferenceBruteForce checks the exhaustive optimum on the real inputs
// against the independent enumeration (every owner per worker, every variant
// combination meeting the target).
func TestReferenceBruteForce(t *testing.T) {
	if testing.Short() {
		t.Skip("enumerates 2.6M placements")
	}
	p := refProblem(t)
	want := bruteForce(t, p)
	ex, err := optimize.Exhaustive{}.Optimize(context.Background(), p, optimize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(ex.TotalCost-want) > 1e-9 {
		t.Fatalf("exhaustive %v, brute force %v", ex.TotalCost, want)
	}
}
