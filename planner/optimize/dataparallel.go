package optimize

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"
)

// This file is what the end-to-end ML-serving baselines of JellyBean 6.1
// (PTC, PTE, SPC) share: no operator-level placement at all. Every chosen
// worker runs the whole workflow, with the most accurate variants (none of
// these systems selects models), on its share of the items (data
// parallelism), so no traffic flows between workers; only the raw inputs
// travel, from the sources to the workers. A worker may thus serve every
// operator, which the plans of the other strategies never do.

// WholeWorkflow is implemented by the strategies whose plans run the whole
// workflow on every machine they use (PTC, PTE, SPC). Their plans are outside
// the decision space of the others (a worker serves one operator): Evaluate
// cannot re-cost them and exhaustive's optimum does not bound them.
type WholeWorkflow interface {
	Strategy
	WholeWorkflow()
}

// IsWholeWorkflow reports whether s is such a strategy.
func IsWholeWorkflow(s Strategy) bool {
	_, ok := s.(WholeWorkflow)
	return ok
}

func (PTC) WholeWorkflow() {}
func (PTE) WholeWorkflow() {}
func (SPC) WholeWorkflow() {}

// workflowLoad is the worker-seconds per second worker w needs to run the whole
// workflow at every operator's demand: sum over operators of T_v / capacity.
// +Inf when w cannot run some operator's variant.
func (in *instance) workflowLoad(vars []int, w int) float64 {
	l := 0.0
	for o := range in.nOps {
		c := in.caps[o][vars[o]][w]
		if c <= 0 {
			return math.Inf(1)
		}
		l += in.ix.demand[o] / c
	}
	return l
}

// cloudWorkers are the baselines' machines: the workers of the top tier with a
// GPU ("a cloud V100 GPU"), or every worker of the top tier when no worker of
// the problem names its GPU (the prototype's input format cannot), that can
// run the whole workflow; in problem order.
func (in *instance) cloudWorkers(vars []int) []int {
	top := len(in.p.Tiers) - 1
	anyGPU := false
	for _, w := range in.p.Workers {
		anyGPU = anyGPU || w.GPU != ""
	}
	var ws []int
	for w := range in.nW {
		if in.ix.workerTier[w] != top || (anyGPU && in.p.Workers[w].GPU == "") {
			continue
		}
		if !math.IsInf(in.workflowLoad(vars, w), 1) {
			ws = append(ws, w)
		}
	}
	return ws
}

// dataParallel prices workers ws running the whole workflow with variants
// vars, worker k taking share[k] of every operator's items. atTier >= 0
// pretends the workers sit in that tier (PTE: no network cost); otherwise the
// sources' items are carried to them at the links' prices.
func (in *instance) dataParallel(vars, ws []int, share []float64, atTier int) *Plan {
	p, ix := in.p, in.ix
	pl := &Plan{Feasible: true, Operators: make([]OperatorPlan, 0, in.nOps)}
	var viol []string
	bw := map[[2]int]float64{}
	acc := in.accuracies(vars)
	for _, o := range ix.topo {
		v := vars[o]
		T := ix.demand[o]
		op := OperatorPlan{Name: p.Operators[o].Name, Variant: p.Operators[o].Variants[v].Name, Demand: T, Accuracy: finite(acc[o])}
		for k, w := range ws {
			tier, loc := p.Workers[w].Tier, p.Workers[w].Location
			if atTier >= 0 {
				tier, loc = p.Tiers[atTier].Name, ""
			}
			c := in.caps[o][v][w]
			items := share[k] * T
			op.Workers = append(op.Workers, WorkerShare{Name: p.Workers[w].Name, Tier: tier, Location: loc, Share: share[k], ItemsPerSec: items, Capacity: c})
			// The worker's price, split over the operators by the time it spends on each.
			op.ComputeCost += in.price[w] * (T / c) / in.workflowLoad(vars, w)
			if atTier >= 0 {
				continue
			}
			for e, ed := range ix.in[o] {
				if ed.src < 0 {
					continue
				}
				j := ed.src*in.nW + w
				if !in.sallowed[j] {
					viol = append(viol, fmt.Sprintf("A2: %s sends down to %s", p.Sources[ed.src].Name, p.Workers[w].Name))
					continue
				}
				kb := in.kb[o][e][0][v]
				op.NetworkCost += items * kb * in.slink[j]
				if ta, tb := ix.sourceTier[ed.src], ix.workerTier[w]; ta != tb || p.Sources[ed.src].Location != p.Workers[w].Location {
					bw[[2]int{ta, tb}] += items * kb / 1024
				}
			}
		}
		pl.ComputeCost += op.ComputeCost
		pl.NetworkCost += op.NetworkCost
		pl.Operators = append(pl.Operators, op)
	}
	pl.TotalCost = pl.ComputeCost + pl.NetworkCost
	keys := make([][2]int, 0, len(bw))
	for k := range bw {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i][0] < keys[j][0] || keys[i][0] == keys[j][0] && keys[i][1] < keys[j][1]
	})
	for _, k := range keys {
		ll := LinkLoad{From: p.Tiers[k[0]].Name, To: p.Tiers[k[1]].Name, MBps: bw[k], BandwidthMBps: ix.tierBW[k[0]][k[1]]}
		pl.Links = append(pl.Links, ll)
		if ll.BandwidthMBps > 0 && ll.MBps > ll.BandwidthMBps*(1+1e-9) {
			viol = append(viol, fmt.Sprintf("bandwidth: %s->%s carries %.4g MB/s over its cap %.4g MB/s", ll.From, ll.To, ll.MBps, ll.BandwidthMBps))
		}
	}
	sa := acc[ix.sink]
	pl.Accuracy = finite(sa)
	if !in.meetsAccuracy(sa) {
		viol = append(viol, fmt.Sprintf("accuracy: the most accurate variants reach %.4g, below the target %.4g", finite(sa), in.target))
	}
	pl.Throughput = ix.demand[ix.sink]
	pl.Violations = viol
	pl.Feasible = len(viol) == 0
	return pl
}

// fillWorkflow takes workers in the given order, each at its full
// whole-workflow capacity and the last for the remainder; nil shares when all
// of them fall short.
func (in *instance) fillWorkflow(vars, ws []int) ([]int, []float64) {
	left := 1.0
	var used []int
	var share []float64
	for _, w := range ws {
		if left <= 1e-12 {
			break
		}
		f := min(1/in.workflowLoad(vars, w), left)
		used, share = append(used, w), append(share, f)
		left -= f
	}
	if left > 1e-9 {
		return nil, nil
	}
	return used, share
}

// cheapestCloud is PTC's and PTE's machines: the cloud GPU workers in order of
// cost per unit of whole-workflow throughput (price x load), as many as the
// workflow needs.
func (in *instance) cheapestCloud(vars []int) ([]int, []float64) {
	ws := in.cloudWorkers(vars)
	sort.SliceStable(ws, func(a, b int) bool {
		return in.price[ws[a]]*in.workflowLoad(vars, ws[a]) < in.price[ws[b]]*in.workflowLoad(vars, ws[b])
	})
	return in.fillWorkflow(vars, ws)
}

// endToEndBaseline runs one of the data-parallel baselines: the most accurate
// variants, the machines pick chooses, priced by dataParallel. Unlike the
// operator-level strategies, an infeasible result says why this baseline
// fails, not why the problem does.
func endToEndBaseline(ctx context.Context, p *Problem, o Options, name string,
	pick func(in *instance, vars []int) (ws []int, share []float64, atTier int, why string)) (*Plan, error) {
	start := time.Now()
	o = o.withDefaults()
	in, err := newInstance(p, o.CostModel)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pl := &Plan{Operators: []OperatorPlan{}}
	if vars := in.mostAccurate(); vars == nil {
		pl.Reason = "no variant combination"
	} else if ws, share, at, why := pick(in, vars); ws == nil {
		pl.Reason = why
	} else {
		pl = in.dataParallel(vars, ws, share, at)
		if !pl.Feasible {
			pl.Reason = pl.Violations[0]
		}
	}
	pl.Strategy = name
	pl.OptimizerMs = sinceMs(start)
	return pl, nil
}

// shortOfCloud is the reason when the cloud cannot carry the workflow.
func (in *instance) shortOfCloud(vars []int) string {
	ws := in.cloudWorkers(vars)
	if len(ws) == 0 {
		return fmt.Sprintf("no worker of tier %s can run the whole workflow", in.p.Tiers[len(in.p.Tiers)-1].Name)
	}
	tp := 0.0
	for _, w := range ws {
		tp += 1 / in.workflowLoad(vars, w)
	}
	return fmt.Sprintf("throughput: the %d workers of tier %s running the whole workflow carry %.4g of the %.4g items/s asked",
		len(ws), in.p.Tiers[len(in.p.Tiers)-1].Name, tp*in.ix.demand[in.ix.sink], in.ix.demand[in.ix.sink])
}
