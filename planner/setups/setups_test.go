package setups

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/catalog"
)

var update = flag.Bool("update", false, "regenerate the files under examples/")

const examples = "../../examples"

func TestPrices(t *testing.T) {
	for v, want := range map[int]float64{2: 1, 8: 1.5, 4: 1.2247, 16: 1.8371} {
		if got := CPUPrice(v); got != want {
			t.Errorf("CPUPrice(%d) = %v, want %v", v, got, want)
		}
	}
	if CPUPrice(48) <= CPUPrice(16) || CPUPrice(48)/48 >= CPUPrice(16)/16 {
		t.Error("prices must grow sub-linearly")
	}
}

// TestExamplesUpToDate regenerates the setups and fails when examples/ holds
// something else (go test ./planner/setups -update rewrites them).
func TestExamplesUpToDate(t *testing.T) {
	ref, err := catalog.LoadFile(filepath.Join(examples, "vqa", "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := Files(ref)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := Write(examples, files); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(examples, name))
		if err != nil {
			t.Errorf("%v (go test ./planner/setups -update)", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("examples/%s is stale (go test ./planner/setups -update)", name)
		}
	}
}

// TestSetupsPlan: every setup's files load, its query binds, and auto finds a
// feasible plan at its Table 4 objectives.
func TestSetupsPlan(t *testing.T) {
	dir := filepath.Join(examples, "setups")
	ix, err := LoadIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ix.Setups) != 8 {
		t.Fatalf("want 8 setups, got %d", len(ix.Setups))
	}
	for _, s := range ix.Setups {
		cat, inf, err := s.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		src, err := os.ReadFile(filepath.Join(dir, s.Query))
		if err != nil {
			t.Fatal(err)
		}
		script, err := lang.Parse(s.Query, string(src))
		if err != nil {
			t.Fatal(err)
		}
		acc := s.Accuracy
		res, err := planner.PlanStatement(context.Background(), script.Statements[len(script.Statements)-1], cat, inf,
			planner.Options{Strategy: "auto", Accuracy: &acc, Throughput: s.Throughput})
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		p := res.Physical
		if !p.Feasible || p.Accuracy < s.Accuracy {
			t.Errorf("%s: feasible %v accuracy %v (want >= %v): %s", s.Name, p.Feasible, p.Accuracy, s.Accuracy, p.Reason)
			continue
		}
		t.Logf("%s: total %.3f (compute %.3f, network %.3f), accuracy %.2f, %.2f ms", s.Name, p.TotalCost, p.ComputeCost, p.NetworkCost, p.Accuracy, p.OptimizerMs)
	}
}
