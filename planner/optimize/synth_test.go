package optimize_test

import (
	"fmt"
	"math"

	"github.com/tierflow/tierflow/planner/optimize"
)

// workerType is a VM shape of JellyBean Table 4 with section 6.1's prices
// (2 vCPU = 1, 8 vCPU = 1.5, sub-linear between, V100 = 3).
type workerType struct {
	name  string
	price float64
	speed float64 // relative to a 2-vCPU VM
}

var (
	x2   = workerType{"x2", 1.0, 1}
	x4   = workerType{"x4", 1.2, 2}
	x8   = workerType{"x8", 1.5, 4}
	x16  = workerType{"x16", 2.2, 8}
	v100 = workerType{"v100", 3.0, 40}
)

type tierSpec struct {
	name  string
	locs  int
	kinds []workerType
	count []int
}

// aicityXLarge is a 30-worker, 3-tier problem shaped like AICity xlarge
// (Table 4: Edge 6x2, 3x4, 1xV100; Hub 8x4, 2x8, 2xV100; Cloud 1x4, 4x8,
// 3xV100) running detection -> ReID -> tracking -> clustering at fps frames/s.
// The profiles are synthetic: latencies scale with model size and VM speed.
func aicityXLarge(fps, acc float64) *optimize.Problem {
	tiers := []tierSpec{
		{"edge", 1, []workerType{x2, x4, v100}, []int{6, 3, 1}},
		{"hub", 1, []workerType{x4, x8, v100}, []int{8, 2, 2}},
		{"cloud", 1, []workerType{x4, x8, v100}, []int{1, 4, 3}},
	}
	p := &optimize.Problem{Name: "aicity-xlarge-synthetic", CommCostScaling: 1}
	for _, t := range tiers {
		p.Tiers = append(p.Tiers, optimize.Tier{Name: t.name, Locations: t.locs})
		for i, k := range t.kinds {
			for j := range t.count[i] {
				p.Workers = append(p.Workers, optimize.Worker{Name: fmt.Sprintf("%s-%s-%d", t.name, k.name, j+1), Tier: t.name, Type: k.name, Price: k.price})
			}
		}
	}
	p.TierLinks = []optimize.TierLink{
		{From: "edge", To: "hub", Multiplier: 0.1},
		{From: "hub", To: "cloud", Multiplier: 0.1},
		{From: "edge", To: "cloud", Multiplier: 0.3},
	}
	p.Sources = []optimize.Source{{Name: "cameras", Rate: fps, Tier: "edge"}}
	lat := func(base float64) map[string]float64 {
		m := map[string]float64{}
		for _, k := range []workerType{x2, x4, x8, x16, v100} {
			m[k.name] = base / k.speed
		}
		return m
	}
	det := optimize.Operator{Name: "detect", Kind: optimize.KindML}
	for i, n := range []string{"yolov5n", "yolov5s", "yolov5m", "yolov5l", "yolov5x"} {
		a := 60 + 4*float64(i)
		det.Variants = append(det.Variants, optimize.Variant{Name: n, ProxyCost: float64(i + 1), Accuracy: optimize.Float(a), LatencyMs: lat(200 * math.Pow(1.8, float64(i)))})
	}
	reid := optimize.Operator{Name: "reid", Kind: optimize.KindML, AccuracyInputs: []string{"detect"}}
	for i, n := range []string{"resnet18", "resnet34", "resnet50", "resnet101"} {
		v := optimize.Variant{Name: n, ProxyCost: float64(i + 1), LatencyMs: lat(40 * math.Pow(1.6, float64(i)))}
		for j := range 5 {
			v.Profile = append(v.Profile, optimize.AccuracyRow{Inputs: []float64{60 + 4*float64(j)}, Output: 55 + 3*float64(j) + 2.5*float64(i)})
		}
		reid.Variants = append(reid.Variants, v)
	}
	track := optimize.Operator{Name: "track", Kind: optimize.KindRelational, Variants: []optimize.Variant{{Name: "default", LatencyMs: lat(30)}}}
	cluster := optimize.Operator{Name: "cluster", Kind: optimize.KindRelational, Variants: []optimize.Variant{{Name: "default", LatencyMs: lat(20)}}}
	p.Operators = []optimize.Operator{det, reid, track, cluster}
	p.Edges = []optimize.Edge{
		{From: "cameras", To: "detect", Ratio: 1, KB: 300},
		{From: "detect", To: "reid", Ratio: 4, KB: 20},
		{From: "reid", To: "track", Ratio: 1, KB: 2},
		{From: "track", To: "cluster", Ratio: 0.25, KB: 4},
	}
	p.Objectives = optimize.Objectives{Sink: "cluster", MinAccuracy: optimize.Float(acc)}
	return p
}

// vqaXLarge is the VQA workflow with the reference's P75 profiles on the
// 30-worker xlarge infrastructure of Table 4 (Edge 6x2, 10x4, 2xV100; Cloud
// 2x4, 6x8, 4xV100) at rps requests/s: latencies and prices per VM type come
// from the reference worker of that type.
func vqaXLarge(ref *optimize.Problem, rps, acc float64) *optimize.Problem {
	p := *ref
	p.Name = "vqa-xlarge-reference-profiles"
	byType := map[string]string{"x2": "workflow-compute-cpu-1", "x4": "workflow-compute-cpu-2", "x8": "workflow-compute-cpu-3", "v100": "workflow-compute-gpu-1"}
	price := map[string]float64{}
	for _, w := range ref.Workers {
		for t, n := range byType {
			if w.Name == n {
				price[t] = w.Price
			}
		}
	}
	p.Workers = nil
	for _, t := range []struct {
		tier  string
		kinds []string
		count []int
	}{{"edge", []string{"x2", "x4", "v100"}, []int{6, 10, 2}}, {"cloud", []string{"x4", "x8", "v100"}, []int{2, 6, 4}}} {
		for i, k := range t.kinds {
			for j := range t.count[i] {
				p.Workers = append(p.Workers, optimize.Worker{Name: fmt.Sprintf("%s-%s-%d", t.tier, k, j+1), Tier: t.tier, Type: k, Price: price[k]})
			}
		}
	}
	p.Operators = nil
	for _, op := range ref.Operators {
		op.Variants = append([]optimize.Variant(nil), op.Variants...)
		for i, v := range op.Variants {
			m := map[string]float64{}
			for t, n := range byType {
				m[t] = v.LatencyMs[n]
			}
			op.Variants[i].LatencyMs = m
		}
		p.Operators = append(p.Operators, op)
	}
	p.WorkerLinks, p.SourceLinks = nil, nil
	p.TierLinks = []optimize.TierLink{{From: "edge", To: "cloud", Multiplier: 1}}
	p.Sources = append([]optimize.Source(nil), ref.Sources...)
	for i := range p.Sources {
		p.Sources[i].Rate = rps
	}
	p.Objectives.MinAccuracy = optimize.Float(acc)
	return &p
}
