package jellybean

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/tierflow/tierflow/planner/optimize"
)

// protoPlan is one entry of prototype-plans.json: the prototype optimizer's own
// output for a variation of the reference inputs.
type protoPlan struct {
	Rate      float64             `json:"rate_rps"`
	Threshold float64             `json:"accuracy_threshold"`
	Profile   string              `json:"profile"`
	Feasible  bool                `json:"feasible"`
	Compute   float64             `json:"compute_cost"`
	Network   float64             `json:"communication_cost"`
	Total     float64             `json:"total"`
	Accuracy  float64             `json:"end_to_end_accuracy"`
	Models    map[string]string   `json:"model_assignment"`
	Workers   map[string][]string `json:"worker_assignment"`
}

func loadProtoPlans(t *testing.T) []protoPlan {
	t.Helper()
	return loadPlans(t, filepath.Join(refDir(t), "prototype-plans.json"))
}

func loadPlans(t *testing.T, path string) []protoPlan {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Plans []protoPlan `json:"plans"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Plans) == 0 {
		t.Fatalf("no plans in %s", path)
	}
	return f.Plans
}

// variation is the reference problem with both sources at rate, the sink's
// threshold and a percentile's execution profile, as the prototype's runs had.
func variation(t testing.TB, pr *Prototype, rate, threshold float64, profile string) *optimize.Problem {
	t.Helper()
	p, err := pr.Problem(profile)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Sources {
		p.Sources[i].Rate = rate
	}
	p.Objectives.MinAccuracy = optimize.Float(threshold)
	return p
}

func within(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Max(math.Abs(want), 1e-9)
}

// TestJellyBeanReproducesPrototypePlans: on every variation the prototype was
// run on, the jellybean strategy picks the prototype's variants and workers
// (in its fill order) and lands on its compute, network and total cost.
func TestJellyBeanReproducesPrototypePlans(t *testing.T) {
	pr, err := Load(refDir(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range loadProtoPlans(t) {
		p := variation(t, pr, want.Rate, want.Threshold, want.Profile)
		pl, err := optimize.JellyBean{}.Optimize(context.Background(), p, optimize.Options{})
		if err != nil {
			t.Fatal(err)
		}
		name := want.Profile + "/" + ftoa(want.Rate) + "rps/" + ftoa(want.Threshold)
		if pl.Feasible != want.Feasible {
			t.Errorf("%s: feasible %v, prototype %v (%s)", name, pl.Feasible, want.Feasible, pl.Reason)
			continue
		}
		if !within(pl.ComputeCost, want.Compute, 1e-3) || !within(pl.NetworkCost, want.Network, 1e-3) || !within(pl.TotalCost, want.Total, 1e-3) {
			t.Errorf("%s: compute %.6f network %.6f total %.6f; prototype %.6f %.6f %.6f",
				name, pl.ComputeCost, pl.NetworkCost, pl.TotalCost, want.Compute, want.Network, want.Total)
		}
		if math.Abs(pl.Accuracy-want.Accuracy) > 1e-9 {
			t.Errorf("%s: accuracy %v, prototype %v", name, pl.Accuracy, want.Accuracy)
		}
		for _, op := range pl.Operators {
			if op.Variant != want.Models[op.Name] {
				t.Errorf("%s: %s variant %s, prototype %s", name, op.Name, op.Variant, want.Models[op.Name])
			}
			var ws []string
			for _, w := range op.Workers {
				ws = append(ws, w.Name)
			}
			if !equalStrings(ws, want.Workers[op.Name]) {
				t.Errorf("%s: %s on %v, prototype %v", name, op.Name, ws, want.Workers[op.Name])
			}
		}
	}
}

// TestJellyBeanPublishedCase: the README's case (40 rps, 56, P75) gives the
// prototype's printed plan, 7.5088 per hour.
func TestJellyBeanPublishedCase(t *testing.T) {
	pr, err := Load(refDir(t))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pr.Problem("p75")
	if err != nil {
		t.Fatal(err)
	}
	pl, err := optimize.JellyBean{}.Optimize(context.Background(), p, optimize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !pl.Feasible || !near(pl.TotalCost, 7.5088, 5e-5) || !near(pl.ComputeCost, 6.242, 1e-9) || !near(pl.NetworkCost, 1.2667783, 1e-6) {
		t.Fatalf("jellybean: feasible %v compute %v network %v total %v; prototype 6.242 1.2667783 7.5088",
			pl.Feasible, pl.ComputeCost, pl.NetworkCost, pl.TotalCost)
	}
	got := pl.Assignment()
	for i, c := range publishedPlan {
		if got[i].Operator != c.Operator || got[i].Variant != c.Variant || !equalStrings(got[i].Workers, c.Workers) {
			t.Errorf("%s: %s on %v, prototype %s on %v", c.Operator, got[i].Variant, got[i].Workers, c.Variant, c.Workers)
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func ftoa(x float64) string { b, _ := json.Marshal(x); return string(b) }

// TestJellyBeanPrototypeSweep: on 32 variations of the reference inputs
// (rates 10-66 rps, thresholds 54-58, P50/P75/P90), the jellybean strategy's
// total equals the prototype's (testdata/prototype-sweep.json, derived by
// following the prototype's code) within 0.1%, or both find no plan, in at
// least 30 cases, with the prototype's variants and workers wherever the cost
// matches. tierflow's own reading of the algorithm (RulesTierflow) is
// logged beside it for comparison.
func TestJellyBeanPrototypeSweep(t *testing.T) {
	pr, err := Load(refDir(t))
	if err != nil {
		t.Fatal(err)
	}
	plans := loadPlans(t, filepath.Join("testdata", "prototype-sweep.json"))
	if len(plans) != 32 {
		t.Fatalf("%d sweep cases, want 32", len(plans))
	}
	match, matchOwn := 0, 0
	same := func(pl *optimize.Plan, want protoPlan) bool {
		if !pl.Feasible || !want.Feasible {
			return pl.Feasible == want.Feasible
		}
		return within(pl.TotalCost, want.Total, 1e-3)
	}
	for _, want := range plans {
		p := variation(t, pr, want.Rate, want.Threshold, want.Profile)
		pl, err := optimize.JellyBean{}.Optimize(context.Background(), p, optimize.Options{})
		if err != nil {
			t.Fatal(err)
		}
		own, err := optimize.JellyBean{Rules: optimize.RulesTierflow}.Optimize(context.Background(), p, optimize.Options{})
		if err != nil {
			t.Fatal(err)
		}
		name := want.Profile + "/" + ftoa(want.Rate) + "rps/" + ftoa(want.Threshold)
		if same(pl, want) {
			match++
			for _, op := range pl.Operators {
				var ws []string
				for _, w := range op.Workers {
					ws = append(ws, w.Name)
				}
				if pl.Feasible && (op.Variant != want.Models[op.Name] || !equalStrings(ws, want.Workers[op.Name])) {
					t.Errorf("%s: same cost but %s=%s on %v, prototype %s on %v", name, op.Name, op.Variant, ws, want.Models[op.Name], want.Workers[op.Name])
				}
			}
		} else {
			t.Logf("%s: jellybean %.6f (feasible %v), prototype %.6f (feasible %v)", name, pl.TotalCost, pl.Feasible, want.Total, want.Feasible)
		}
		if same(own, want) {
			matchOwn++
		}
	}
	t.Logf("prototype's cost within 0.1%%: jellybean %d of %d, tierflow's reading %d of %d", match, len(plans), matchOwn, len(plans))
	if match < 30 {
		t.Errorf("jellybean matches the prototype in %d of %d cases, want >= 30", match, len(plans))
	}
}
