package optimize_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/planner/optimize"
)

func TestInfeasibleAccuracyGivesBestReachable(t *testing.T) {
	p := refProblem(t)
	p.Objectives.MinAccuracy = optimize.Float(60)
	reg := optimize.DefaultRegistry()
	for _, name := range reg.Names() {
		if s, _ := reg.Lookup(name); optimize.IsWholeWorkflow(s) {
			continue // they say why they fail, not what the problem allows (baselines_test.go)
		}
		pl, err := reg.Optimize(context.Background(), name, p, optimize.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if pl.Feasible || !strings.Contains(pl.Reason, "accuracy target 60") {
			t.Fatalf("%s: feasible %v reason %q", name, pl.Feasible, pl.Reason)
		}
		// 58.33 is the best combination in the profile, and it can be placed at 40 rps.
		if r := pl.Reachable; r == nil || r.MaxAccuracy == nil || *r.MaxAccuracy != 58.33 {
			t.Fatalf("%s: reachable %+v, want max accuracy 58.33", name, pl.Reachable)
		}
	}
}

func TestInfeasibleThroughputGivesMaxThroughput(t *testing.T) {
	p := refProblem(t)
	p.Objectives.Throughput = 1000
	ctx := context.Background()
	pl, err := optimize.Auto{}.Optimize(ctx, p, optimize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if pl.Feasible || !strings.Contains(pl.Reason, "throughput 1000") || pl.Reachable == nil || pl.Reachable.MaxThroughput == nil {
		t.Fatalf("feasible %v reason %q reachable %+v", pl.Feasible, pl.Reason, pl.Reachable)
	}
	maxT := *pl.Reachable.MaxThroughput
	// Just below the reported maximum is feasible, just above is not.
	for _, c := range []struct {
		scale float64
		want  bool
	}{{0.999, true}, {1.01, false}} {
		q := refProblem(t)
		q.Objectives.Throughput = maxT * c.scale
		got, err := optimize.Exhaustive{}.Optimize(ctx, q, optimize.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Feasible != c.want {
			t.Errorf("throughput %v (max %v x %v): feasible %v, want %v (%s)", q.Objectives.Throughput, maxT, c.scale, got.Feasible, c.want, got.Reason)
		}
	}
}

// zeroPrice makes one worker free, to force the optimizer to use it.
type zeroPrice struct {
	optimize.PrototypeModel
	worker string
}

type zeroPriceCosts struct {
	optimize.Costs
	w int
}

func (m zeroPrice) Prepare(p *optimize.Problem) (optimize.Costs, error) {
	c, err := m.PrototypeModel.Prepare(p)
	if err != nil {
		return nil, err
	}
	for i, w := range p.Workers {
		if w.Name == m.worker {
			return zeroPriceCosts{c, i}, nil
		}
	}
	return c, nil
}

func (c zeroPriceCosts) Price(w int) float64 {
	if w == c.w {
		return 0
	}
	return c.Costs.Price(w)
}

func TestInjectedCostModelForcesChoice(t *testing.T) {
	p := refProblem(t)
	const free = "workflow-compute-gpu-3"
	pl, err := optimize.Auto{}.Optimize(context.Background(), p, optimize.Options{CostModel: zeroPrice{worker: free}})
	if err != nil {
		t.Fatal(err)
	}
	used := false
	for _, op := range pl.Operators {
		for _, w := range op.Workers {
			used = used || w.Name == free
		}
	}
	if !pl.Feasible || !pl.Optimal || !used {
		t.Fatalf("feasible %v optimal %v, free worker used %v: %+v", pl.Feasible, pl.Optimal, used, pl.Operators)
	}
	def, err := optimize.Evaluate(p, pl.Assignment(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if def.TotalCost-pl.TotalCost < 2.497-1e-9 {
		t.Errorf("the injected model should save gpu-3's price: %v vs %v", pl.TotalCost, def.TotalCost)
	}
}

func TestEvaluateReportsViolations(t *testing.T) {
	p := refProblem(t)
	a := optimize.Assignment{
		// VQA on the edge while SpeechRecognition sits in the cloud: A2.
		{Operator: "ExtractImageFeature", Variant: "resnet18", Workers: []string{"workflow-compute-cpu-1"}},
		{Operator: "SpeechRecognition", Variant: "wav2vec2-base-960h", Workers: []string{"workflow-compute-gpu-1"}},
		{Operator: "VQA", Variant: "default", Workers: []string{"workflow-compute-cpu-5"}},
	}
	pl, err := optimize.Evaluate(p, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	var a2, capacity, accuracy bool
	for _, v := range pl.Violations {
		a2 = a2 || strings.HasPrefix(v, "A2:")
		capacity = capacity || strings.HasPrefix(v, "capacity:")
		accuracy = accuracy || strings.HasPrefix(v, "accuracy:")
	}
	if pl.Feasible || !a2 || !capacity || !accuracy {
		t.Fatalf("feasible %v violations %v", pl.Feasible, pl.Violations)
	}
	p.TierLinks = []optimize.TierLink{{From: "edge", To: "cloud", Multiplier: 0, BandwidthMBps: 1}}
	pub := optimize.Assignment{
		{Operator: "ExtractImageFeature", Variant: "resnet18", Workers: []string{"workflow-compute-cpu-1", "workflow-compute-cpu-2", "workflow-compute-cpu-5"}},
		{Operator: "SpeechRecognition", Variant: "wav2vec2-large-960h-lv60-self", Workers: []string{"workflow-compute-gpu-1", "workflow-compute-cpu-3"}},
		{Operator: "VQA", Variant: "default", Workers: []string{"workflow-compute-cpu-6"}},
	}
	pl, err = optimize.Evaluate(p, pub, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Feasible || len(pl.Violations) != 1 || !strings.HasPrefix(pl.Violations[0], "bandwidth:") {
		t.Fatalf("bandwidth cap of 1 MB/s edge->cloud: feasible %v violations %v", pl.Feasible, pl.Violations)
	}
	if _, err := optimize.Evaluate(p, optimize.Assignment{{Operator: "nope"}}, nil); err == nil {
		t.Fatal("unknown operator accepted")
	}
}

func TestBandwidthCapChangesTheOptimum(t *testing.T) {
	p := refProblem(t)
	// The optimum sends ~3.5 MB/s edge->cloud; cap it below that.
	p.TierLinks = []optimize.TierLink{{From: "edge", To: "cloud", BandwidthMBps: 3.3}}
	pl, err := optimize.Exhaustive{}.Optimize(context.Background(), p, optimize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !pl.Feasible {
		t.Fatalf("infeasible: %s", pl.Reason)
	}
	for _, l := range pl.Links {
		if l.BandwidthMBps > 0 && l.MBps > l.BandwidthMBps {
			t.Fatalf("link %+v over its cap", l)
		}
	}
	if pl.TotalCost <= 7.4850 {
		t.Errorf("capped optimum %v should cost more than the uncapped one", pl.TotalCost)
	}
}
