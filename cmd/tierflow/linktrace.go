package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/runtime/cluster"
)

// linkTrace is one `--link-trace TIER_A:TIER_B=FILE`: every relay link from a
// worker of tier From to a worker of tier To is shaped to Trace.
type linkTrace struct {
	From, To string
	Trace    *relay.Trace
}

// parseLinkTraces reads the --link-trace flags against inf's tiers. A bad
// spec, an unknown tier or a bad trace file is bad input.
func parseLinkTraces(specs []string, inf *infra.Infra) ([]linkTrace, error) {
	var out []linkTrace
	for _, spec := range specs {
		tiers, file, ok := strings.Cut(spec, "=")
		from, to, ok2 := strings.Cut(tiers, ":")
		if !ok || !ok2 || from == "" || to == "" || file == "" {
			return nil, badInput(fmt.Errorf("--link-trace %q: want TIER_A:TIER_B=FILE", spec))
		}
		for _, t := range []string{from, to} {
			if !hasTier(inf, t) {
				return nil, badInput(fmt.Errorf("--link-trace %q: no tier %q in the infrastructure (tiers: %s)", spec, t, strings.Join(tierNames(inf), ", ")))
			}
		}
		tr, err := relay.ReadTrace(file)
		if err != nil {
			return nil, badInput(err)
		}
		out = append(out, linkTrace{From: from, To: to, Trace: tr})
	}
	return out, nil
}

func hasTier(inf *infra.Infra, name string) bool {
	for _, m := range inf.Machines() {
		if m.Tier == name {
			return true
		}
	}
	return false
}

func tierNames(inf *infra.Infra) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range inf.Machines() {
		if !seen[m.Tier] {
			seen[m.Tier] = true
			out = append(out, m.Tier)
		}
	}
	return out
}

// linkShaper turns the traces into the cluster's Shaper, all played from
// start. The i-th sending worker of a shaped tier (of n) plays its trace
// i/n of a period ahead, so that the clients' links do not drop together
// (as the Jellyfish experiments shift their clients).
func linkShaper(traces []linkTrace, inf *infra.Infra, start time.Time) func(from, to string) relay.Shaper {
	if len(traces) == 0 {
		return nil
	}
	tier := map[string]string{}
	index := map[string]int{}
	count := map[string]int{}
	for _, m := range inf.Machines() {
		name := cluster.WorkerName(m.Name)
		tier[name] = m.Tier
		index[name] = count[m.Tier]
		count[m.Tier]++
	}
	return func(from, to string) relay.Shaper {
		for _, lt := range traces {
			if tier[from] != lt.From || tier[to] != lt.To {
				continue
			}
			off := lt.Trace.Period * time.Duration(index[from]) / time.Duration(max(count[lt.From], 1))
			return relay.TraceShaper{Trace: lt.Trace, Start: start, Offset: off}
		}
		return nil
	}
}
