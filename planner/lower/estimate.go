package lower

import (
	"math"
	"sort"

	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/optimize"
)

// EstimatedLatencyMs is the per-item latency assumed for a model variant
// that has no latency profile at all: a model declared in SQL (CREATE
// MODEL ... FROM 'file.onnx') before `tierflow profile` measured it. It is
// the order of a small CNN on one CPU core; the plan says it is an
// estimate, and a profile replaces it.
const EstimatedLatencyMs = 10.0

// estimate gives a model that no worker of the infrastructure can run by its
// profiles a latency on every worker type: its profiles are for another
// setup, or it has none yet. Profiles of other machines say little about
// these, so the model is planned at one speed, on the safe side: the
// slowest latency profiled for any of its variants, or EstimatedLatencyMs
// when it was never profiled. A model profiled for some of the
// infrastructure's worker types keeps its profiles as they are: the types
// they leave out cannot run it (a GPU-only variant, say).
//
// Estimated alike, a variant less accurate than another is dropped: no
// objective can prefer it, and with free workers (run's default
// infrastructure) every plan costs the same, so keeping it would let a tie
// pick a less accurate variant for nothing. A model without a profile for
// the infrastructure thus runs its most accurate variant, as the runtime's
// default placement does.
//
// It returns the variants to plan with and, by variant name, the worker
// types estimated (nil: the model's profiles cover the infrastructure).
func (l *lowerer) estimate(m *catalog.Model, variants []optimize.Variant, withInputs bool) ([]optimize.Variant, map[string][]string) {
	if l.runnable(m) {
		return variants, nil
	}
	var types []string
	seen := map[string]bool{}
	for _, w := range l.p.Workers {
		if !seen[w.Type] {
			seen[w.Type] = true
			types = append(types, w.Type)
		}
	}
	sort.Strings(types)
	ms := 0.0
	for _, v := range variants {
		for _, lat := range v.LatencyMs {
			if !math.IsInf(lat, 0) && !math.IsNaN(lat) {
				ms = math.Max(ms, lat)
			}
		}
	}
	if ms <= 0 {
		ms = EstimatedLatencyMs
	}
	out := map[string][]string{}
	for i := range variants {
		ov := &variants[i]
		ov.LatencyMs = map[string]float64{}
		for _, t := range types {
			ov.LatencyMs[t] = ms
		}
		ov.ProxyCost = ms
		out[ov.Name] = types
	}
	if withInputs {
		// Accuracy follows upstream models' profiles: not comparable here.
		return variants, out
	}
	return undominated(variants), out
}

// undominated drops every variant another one beats: no slower on every
// worker type and no less accurate, and better in one (of equals, the first
// is kept).
func undominated(vs []optimize.Variant) []optimize.Variant {
	acc := func(v optimize.Variant) float64 {
		if v.Accuracy == nil {
			return 0
		}
		return *v.Accuracy
	}
	beats := func(a, b optimize.Variant) (better, noWorse bool) {
		noWorse = acc(a) >= acc(b)
		better = acc(a) > acc(b)
		for t, lb := range b.LatencyMs {
			la, ok := a.LatencyMs[t]
			if !ok || la > lb {
				return false, false
			}
			better = better || la < lb
		}
		return better, noWorse
	}
	var out []optimize.Variant
	for i, b := range vs {
		dominated := false
		for j, a := range vs {
			if i == j {
				continue
			}
			better, noWorse := beats(a, b)
			if noWorse && (better || j < i) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, b)
		}
	}
	return out
}

// Profiled lists the worker types m's latency profiles name (sorted).
func Profiled(m *catalog.Model) []string { return SortedWorkerTypes(m) }

// runnable says whether some variant of m has a latency profile for a
// worker of the infrastructure (by the worker's name or its type).
func (l *lowerer) runnable(m *catalog.Model) bool {
	for _, v := range m.Variants {
		for k := range v.Latency {
			for _, w := range l.p.Workers {
				if w.Name == k || w.Type == k {
					return true
				}
			}
		}
	}
	return false
}
