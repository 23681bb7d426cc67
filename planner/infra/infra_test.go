package infra

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

const good = `
tiers:
  - name: edge
    locations: 5
  - name: cloud
worker_types:
  - {name: x2, vcpus: 2, memory_gb: 4, price: 1}
  - {name: v100, vcpus: 8, gpu: V100, price: 3}
workers:
  - {name: e, type: x2, tier: edge, count: 2}
  - {name: g, type: v100, tier: cloud}
links:
  - {from: edge, to: cloud, cost_per_gb: 0.3, bandwidth_mbps: 10}
`

func TestParseGood(t *testing.T) {
	in, err := Parse("good.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	ms := in.Machines()
	if len(ms) != 3 || ms[0].Name != "e-1" || ms[1].Name != "e-2" || ms[2].Type.GPU != "V100" {
		t.Fatalf("machines: %+v", ms)
	}
	if in.TCoeff(0) != 5 || in.TCoeff(1) != 1 {
		t.Fatalf("tcoeff %v %v", in.TCoeff(0), in.TCoeff(1))
	}
	if in.DefaultSourceTier() != "edge" {
		t.Fatal(in.DefaultSourceTier())
	}
	// Round trip through Marshal.
	b, err := in.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("again.yaml", b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if len(again.Machines()) != 3 || again.Links[0].BandwidthMbps != 10 {
		t.Fatalf("round trip lost data:\n%s", b)
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	src := `tiers:
  - name: edge
  - name: cloud
worker_types:
  - {name: x2, price: -1}
workers:
  - {name: e, type: x3, tier: edgy}
  - {name: f, type: x2, tier: cloud, colour: red}
links:
  - {from: cloud, to: edge, cost_per_gb: 0.1}
  - {from: edge, to: sky, cost_per_gb: 0.1}
`
	_, err := Parse("bad.yaml", []byte(src))
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("want ErrInvalid, got %v", err)
	}
	want := []string{
		"bad.yaml:5:23: worker_type.price: must not be negative",
		`bad.yaml:7:21: unknown worker type "x3" (did you mean "x2"?)`,
		`bad.yaml:7:31: unknown tier "edgy" (did you mean "edge"?)`,
		`bad.yaml:8:38: worker: unknown field "colour"`,
		"bad.yaml:10:23: link cloud -> edge goes down the tiers",
		`bad.yaml:11:22: unknown tier "sky"`,
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in:\n%v", w, err)
		}
	}
}

func TestParseSyntaxError(t *testing.T) {
	_, err := Parse("x.yaml", []byte("tiers: [\n  - a\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "x.yaml:") {
		t.Fatalf("got %v", err)
	}
}

// A pair of tiers no link prices is an error at the higher tier (traffic
// over it would cost nothing), unless worker links price every pair of their
// workers or the file names a default link.
func TestMissingTierLinkIsAnErrorUnlessDefaulted(t *testing.T) {
	const base = `tiers:
  - name: edge
  - name: hub
  - name: cloud
worker_types: [{name: x2, price: 1}]
workers:
  - {name: e, type: x2, tier: edge}
  - {name: h, type: x2, tier: hub}
  - {name: c, type: x2, tier: cloud, count: 2}
links:
  - {from: edge, to: hub, cost_per_gb: 0.1}
`
	_, err := Parse("i.yaml", []byte(base))
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("want ErrInvalid, got %v", err)
	}
	for _, w := range []string{"i.yaml:4:5: no link prices traffic from tier edge to tier cloud", "i.yaml:4:5: no link prices traffic from tier hub to tier cloud"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in:\n%v", w, err)
		}
	}
	// Worker links for every pair of hub and cloud workers price that pair.
	workers := base + "  - {from: h, to: c-1, cost_per_gb: 0.2}\n  - {from: h, to: c-2, cost_per_gb: 0.2}\n"
	_, err = Parse("i.yaml", []byte(workers))
	if err == nil || strings.Contains(err.Error(), "hub to tier cloud") || !strings.Contains(err.Error(), "edge to tier cloud") {
		t.Fatalf("worker links: got %v", err)
	}
	// A default link prices every pair no link names.
	in, err := Parse("i.yaml", []byte(base+"default_link: {cost_per_gb: 0.5, bandwidth_mbps: 100}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, l := range in.TierLinks() {
		got[l.From+">"+l.To] = l.CostPerGB
	}
	if len(got) != 3 || got["edge>hub"] != 0.1 || got["edge>cloud"] != 0.5 || got["hub>cloud"] != 0.5 {
		t.Fatalf("tier links %v", got)
	}
	// It round-trips.
	b, err := in.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if again, err := Parse("again.yaml", b); err != nil || again.DefaultLink == nil || again.DefaultLink.BandwidthMbps != 100 {
		t.Fatalf("round trip: %v\n%s", err, b)
	}
}

// Every infrastructure file the project ships loads: those that relied on a
// missing pair costing nothing say so with a default link.
func TestExampleInfrastructuresLoad(t *testing.T) {
	files, _ := filepath.Glob("../../examples/*/*infra.yaml")
	more, _ := filepath.Glob("../*/testdata/*infra*.yaml")
	files = append(files, more...)
	if len(files) < 10 {
		t.Fatalf("found only %v", files)
	}
	for _, f := range files {
		if _, err := LoadFile(f); err != nil {
			t.Errorf("%v", err)
		}
	}
}
