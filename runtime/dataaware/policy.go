package dataaware

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tierflow/tierflow/runtime/control"
)

// Policy is the data-aware re-planning policy (SneakPeek in the control
// loop): it watches the Estimator's class mix of a stream and, when the mix
// has moved by more than Drift (total variation distance) from the one the
// query's plan was made for, asks for a new plan weighed by the live mix
// (control.Decision.ClassMix). For a query whose ACCURACY is DATA AWARE the
// planner then picks the variant that meets the target on this data: the
// variant changes at an epoch. Other queries are re-planned to the same plan
// (the coordinator keeps it).
type Policy struct {
	// Model is the catalog model whose input the estimator sees.
	Model     string
	Estimator *Estimator
	// Key is the estimator's stream key ("" for the whole stream).
	Key string
	// MinRows of evidence before the first decision; MinAge lets a new
	// plan settle before it is judged.
	MinRows int
	MinAge  time.Duration
	// Drift is the total variation distance (0..1) from the planned mix
	// that asks for a re-plan.
	Drift float64
	// Base is the mix the first plan assumed: the profile's class supports
	// (the profiled accuracy's implicit mix); nil: uniform.
	Base map[string]float64

	mu sync.Mutex
	// asked is the mix of each query's last Decision; seen the estimate
	// at its last Decide.
	asked, seen map[string]map[string]float64
}

// Decide implements control.Policy.
func (p *Policy) Decide(in control.PolicyInput) *control.Decision {
	if in.Age < p.MinAge {
		return nil
	}
	mix, n := p.Estimator.Mix(p.Key)
	if n < max(p.MinRows, 1) {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.asked == nil {
		p.asked, p.seen = map[string]map[string]float64{}, map[string]map[string]float64{}
	}
	// Only a mix that has settled is worth a plan: while the estimate
	// still moves (a shift half through the window) the plan would be
	// made for a mix that is neither the old nor the new one.
	prev := p.seen[in.Query]
	p.seen[in.Query] = mix
	if prev == nil || Distance(mix, prev) >= p.Drift/2 {
		return nil
	}
	ref := p.asked[in.Query]
	if ref == nil {
		ref = p.Base
		if ref == nil {
			ref = map[string]float64{}
			for _, c := range p.Estimator.Evidence.Classes() {
				ref[c] = 1
			}
		}
	}
	d := Distance(mix, ref)
	if d < p.Drift {
		return nil
	}
	p.asked[in.Query] = mix
	return &control.Decision{
		Reason:      fmt.Sprintf("class mix of %s moved %.0f%% (now %s)", p.Model, 100*d, Top(mix, 3)),
		Constraints: control.Constraints{ClassMix: map[string]map[string]float64{p.Model: mix}},
	}
}

// Distance is the total variation distance between two class mixes (each
// normalised): half the sum of the absolute differences, 0..1.
func Distance(a, b map[string]float64) float64 {
	sa, sb := 0.0, 0.0
	for _, v := range a {
		sa += v
	}
	for _, v := range b {
		sb += v
	}
	if sa == 0 || sb == 0 {
		return 1
	}
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var d float64
	for k := range keys {
		d += math.Abs(a[k]/sa - b[k]/sb)
	}
	return d / 2
}

// Top names a mix's n largest classes with their shares ("Coat 38%, ...").
func Top(mix map[string]float64, n int) string {
	type kv struct {
		k string
		v float64
	}
	var xs []kv
	var sum float64
	for k, v := range mix {
		xs = append(xs, kv{k, v})
		sum += v
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i].v > xs[j].v || xs[i].v == xs[j].v && xs[i].k < xs[j].k })
	var parts []string
	for i := 0; i < len(xs) && i < n; i++ {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", xs[i].k, 100*xs[i].v/sum))
	}
	return strings.Join(parts, ", ")
}
