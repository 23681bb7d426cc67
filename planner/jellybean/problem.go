package jellybean

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/tierflow/tierflow/planner/optimize"
)

// ErrPercentile: the asked execution profile is not in the directory.
var ErrPercentile = errors.New("no execution profile for percentile")

// TierNames names the prototype's unnamed tiers by how many there are.
func TierNames(n int) []string {
	switch n {
	case 1:
		return []string{"cloud"}
	case 2:
		return []string{"edge", "cloud"}
	case 3:
		return []string{"edge", "hub", "cloud"}
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("tier%d", i+1)
	}
	return names
}

// Profile returns the execution profile rows of a percentile ("p50", "p75",
// "p90"; "" means p75, the prototype's default). p75 falls back to the
// unsuffixed file, which the prototype publishes as P75.
func (pr *Prototype) Profile(percentile string) ([]ExecRow, error) {
	pc := strings.ToLower(percentile)
	if pc == "" {
		pc = "p75"
	}
	if rows, ok := pr.Profiles[pc]; ok {
		return rows, nil
	}
	if rows, ok := pr.Profiles[""]; ok && pc == "p75" {
		return rows, nil
	}
	have := make([]string, 0, len(pr.Profiles))
	for k := range pr.Profiles {
		if k == "" {
			k = "(unsuffixed)"
		}
		have = append(have, k)
	}
	sort.Strings(have)
	return nil, fmt.Errorf("%w %q in %s (have %v)", ErrPercentile, percentile, pr.Dir, have)
}

// Problem lowers the prototype's inputs into an optimizer problem with the
// prototype's cost model: sources are the graph nodes with an injection rate,
// all in the lowest tier; tiers are named by TierNames; link multipliers and the
// communication scaling factor are kept as given; the accuracy target is the
// requirement's threshold and the sink's accuracy comes from the end-to-end table.
// Variants are ordered by proxy cost.
func (pr *Prototype) Problem(percentile string) (*optimize.Problem, error) {
	rows, err := pr.Profile(percentile)
	if err != nil {
		return nil, err
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %w: "+format, append([]any{pr.Dir, ErrFormat}, args...)...))
	}
	tiers := TierNames(len(pr.Partition))
	p := &optimize.Problem{
		Name:            baseName(pr.Dir),
		CommCostScaling: pr.Config.CommCostScaling,
		Objectives: optimize.Objectives{
			Sink:        pr.Requirement.Sink,
			MinAccuracy: optimize.Float(pr.Requirement.Threshold),
		},
	}
	if p.CommCostScaling == 0 {
		// Zero would mean 1 to the optimizer; the prototype means free network.
		p.CommCostScaling = 1e-300
	}
	for _, t := range tiers {
		p.Tiers = append(p.Tiers, optimize.Tier{Name: t, Locations: 1})
	}
	workerTier := map[string]string{}
	for i, ws := range pr.Partition {
		for _, w := range ws {
			workerTier[w] = tiers[i]
		}
	}
	for _, w := range pr.Workers {
		t, ok := workerTier[w.Name]
		if !ok {
			bad("worker %q is in no tier of workers_partition.json", w.Name)
		}
		p.Workers = append(p.Workers, optimize.Worker{Name: w.Name, Tier: t, Type: w.Name, Price: w.Price})
	}
	isSource := map[string]bool{}
	for _, r := range pr.Rates {
		isSource[r.Source] = true
		p.Sources = append(p.Sources, optimize.Source{Name: r.Source, Rate: r.RPS, Tier: tiers[0]})
	}
	// Operators in order of first appearance in the graph.
	var opNames []string
	seen := map[string]bool{}
	for _, e := range pr.Graph {
		for _, n := range []string{e.From, e.To} {
			if !seen[n] && !isSource[n] {
				seen[n] = true
				opNames = append(opNames, n)
			}
		}
	}
	accOf := map[string]*AccuracyOp{}
	for i := range pr.Accuracy.Operators {
		accOf[pr.Accuracy.Operators[i].Name] = &pr.Accuracy.Operators[i]
	}
	lat := map[string]map[string]map[string]float64{} // op -> variant -> worker
	for _, r := range rows {
		if lat[r.Operator] == nil {
			lat[r.Operator] = map[string]map[string]float64{}
		}
		if lat[r.Operator][r.Variant] == nil {
			lat[r.Operator][r.Variant] = map[string]float64{}
		}
		lat[r.Operator][r.Variant][r.Worker] = r.LatencyMs * pr.Config.LatencyOverestimateRatio
	}
	for _, name := range opNames {
		op := optimize.Operator{Name: name, Kind: optimize.KindRelational}
		var variants []string
		ao := accOf[name]
		if ao != nil {
			op.Kind = optimize.KindML
			op.AccuracyInputs = ao.Inputs
			for v := range ao.Cost {
				variants = append(variants, v)
			}
			for v := range ao.Accuracy {
				if _, ok := ao.Cost[v]; !ok {
					variants = append(variants, v)
				}
			}
			sort.Slice(variants, func(i, j int) bool {
				ci, cj := ao.Cost[variants[i]], ao.Cost[variants[j]]
				return ci < cj || ci == cj && variants[i] < variants[j]
			})
		} else {
			for v := range lat[name] {
				variants = append(variants, v)
			}
			sort.Strings(variants)
		}
		if len(variants) == 0 {
			bad("operator %q has neither accuracy profiles nor execution profile rows", name)
		}
		for _, vn := range variants {
			v := optimize.Variant{Name: vn, LatencyMs: lat[name][vn]}
			if v.LatencyMs == nil {
				bad("operator %q variant %q has no execution profile rows", name, vn)
			}
			if ao != nil {
				v.ProxyCost = ao.Cost[vn]
				for _, s := range ao.Accuracy[vn] {
					v.Profile = append(v.Profile, optimize.AccuracyRow{Inputs: s.InputAccuracies, Output: s.OutputAccuracy})
				}
			}
			op.Variants = append(op.Variants, v)
		}
		p.Operators = append(p.Operators, op)
	}
	ratio := map[[2]string]float64{}
	for _, r := range pr.Ratios {
		ratio[[2]string{r.From, r.To}] = r.Ratio
	}
	for _, e := range pr.Graph {
		ed := optimize.Edge{From: e.From, To: e.To, Ratio: 1}
		if r, ok := ratio[[2]string{e.From, e.To}]; ok {
			ed.Ratio = r
		}
		for _, m := range pr.MessageSizes {
			if m.From != e.From || m.To != e.To {
				continue
			}
			if m.FromVariant == "default" && m.ToVariant == "default" {
				ed.KB = m.KB
				continue
			}
			ed.Sizes = append(ed.Sizes, optimize.MessageSize{FromVariant: m.FromVariant, ToVariant: m.ToVariant, KB: m.KB})
		}
		p.Edges = append(p.Edges, ed)
	}
	for _, l := range pr.WorkerLinks {
		p.WorkerLinks = append(p.WorkerLinks, optimize.WorkerLink{From: l.From, To: l.To, Multiplier: l.Multiplier})
	}
	for _, l := range pr.SourceLinks {
		p.SourceLinks = append(p.SourceLinks, optimize.SourceLink{Source: l.From, Worker: l.To, Multiplier: l.Multiplier})
	}
	if e := pr.Accuracy.EndToEnd; e != nil {
		t := &optimize.EndToEndAccuracy{Operators: e.Operators}
		for _, r := range e.Accuracy {
			t.Rows = append(t.Rows, optimize.EndToEndRecord{Variants: r.Variants, Accuracy: r.Accuracy})
		}
		p.EndToEnd = t
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

func baseName(dir string) string {
	dir = strings.TrimRight(dir, "/")
	if i := strings.LastIndexByte(dir, '/'); i >= 0 {
		return dir[i+1:]
	}
	return dir
}
