package inference

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/runtime/inference/sched"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// sizedZoo is examples/fashion/sizes.yaml's three input sizes, listed out
// of order: the neighbours go by input size.
func sizedZoo() *catalog.Model {
	pos := catalog.Pos{File: filepath.Join(fashionDir, "sizes.yaml")}
	return &catalog.Model{Name: "classify_sized", Variants: []*catalog.Variant{
		{Name: "fit-28", File: "models/fit-28.onnx", Accuracy: 86.68, InputSize: []int{28, 28}, Pos: pos},
		{Name: "fit-14", File: "models/fit-14.onnx", Accuracy: 84.31, InputSize: []int{14, 14}, Pos: pos},
		{Name: "fit-20", File: "models/fit-20.onnx", Accuracy: 85.75, InputSize: []int{20, 20}, Pos: pos},
	}}
}

func TestNeighboursBySize(t *testing.T) {
	m := sizedZoo()
	names := func(vs []*catalog.Variant) string {
		var out []string
		for _, v := range vs {
			out = append(out, v.Name)
		}
		return fmt.Sprint(out)
	}
	for variant, want := range map[string]string{"fit-14": "[fit-20]", "fit-20": "[fit-14 fit-28]", "fit-28": "[fit-20]"} {
		if got := names(Neighbours(m, m.Variant(variant))); got != want {
			t.Errorf("neighbours of %s: %s, want %s", variant, got, want)
		}
	}
}

// TestLatencyCallPreloadsItsNeighbours: a model call under a LATENCY bound
// (the SLO policy may move it a step up or down the zoo at the next
// cut-over) opens its variant's session and, in the background, those of
// the variants next to it, so the cut-over finds them in the process's
// session cache; a call without a bound opens its own only. Each case uses
// a thread count of its own: sessions are cached by (file, device,
// threads), so the cache's growth counts this case's sessions.
func TestLatencyCallPreloadsItsNeighbours(t *testing.T) {
	env, err := onnx.Open("")
	if err != nil {
		t.Skip(err)
	}
	for _, c := range []struct {
		variant string
		latency time.Duration
		threads int
		want    int
	}{{"fit-20", 100 * time.Millisecond, 7, 3}, {"fit-28", 100 * time.Millisecond, 9, 2}, {"fit-20", 0, 11, 1}} {
		before := env.Cached()
		scan := shelfScan(t)
		lat := logical.NewLateralModel(scan, sizedZoo(), "classify",
			[]expr.Expr{&expr.Column{Index: 1, Name: "image", DataType: scan.Schema().Field(1).Type}}, "c", classScore, logical.Pos{})
		rt := New(Config{Variants: map[string]string{"classify": c.variant}, IntraOpThreads: c.threads, Tenant: sched.Tenant{Query: "q", Latency: c.latency}})
		if _, _, err := rt.Lateral(lat, scan.Schema()); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for env.Cached()-before < c.want && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if got := env.Cached() - before; got != c.want {
			t.Errorf("%s, LATENCY %v: %d sessions opened, want %d", c.variant, c.latency, got, c.want)
		}
	}
}
