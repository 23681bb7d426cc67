package infra

import (
	"errors"
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
