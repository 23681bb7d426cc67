package optimize

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// sol is a plan's decisions in indices: per operator a variant and workers in
// fill order.
type sol struct {
	vars    []int
	workers [][]int
}

func (s sol) clone() sol {
	c := sol{vars: append([]int(nil), s.vars...), workers: make([][]int, len(s.workers))}
	for i, w := range s.workers {
		c.workers[i] = append([]int(nil), w...)
	}
	return c
}

// Evaluate costs a given assignment under the model (nil: PrototypeModel) and
// checks every constraint: each operator placed on workers able to run its
// variant, no worker used twice, capacity covering each demand, A2, bandwidth
// caps, the accuracy target. Broken constraints are listed in Violations and make
// Feasible false; a malformed assignment (unknown names) is an error.
func Evaluate(p *Problem, a Assignment, m CostModel) (*Plan, error) {
	e, err := NewEvaluator(p, m)
	if err != nil {
		return nil, err
	}
	return e.Evaluate(a)
}

// Evaluator evaluates many assignments of one problem (sweeps, enumerations)
// without preparing the problem and the cost model each time.
type Evaluator struct{ in *instance }

// NewEvaluator validates p and prepares the model (nil: PrototypeModel).
func NewEvaluator(p *Problem, m CostModel) (*Evaluator, error) {
	in, err := newInstance(p, m)
	if err != nil {
		return nil, err
	}
	return &Evaluator{in: in}, nil
}

// Evaluate is the package-level Evaluate on the prepared problem.
func (e *Evaluator) Evaluate(a Assignment) (*Plan, error) {
	s, err := e.in.resolve(a)
	if err != nil {
		return nil, err
	}
	pl := e.in.evaluate(s)
	pl.Strategy = "evaluate"
	return pl, nil
}

func (in *instance) resolve(a Assignment) (sol, error) {
	p := in.p
	s := sol{vars: make([]int, in.nOps), workers: make([][]int, in.nOps)}
	seen := make([]bool, in.nOps)
	used := map[int]string{}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidAssignment}, args...)...))
	}
	for _, c := range a {
		o, ok := in.ix.ops[c.Operator]
		if !ok {
			bad("unknown operator %q", c.Operator)
			continue
		}
		if seen[o] {
			bad("operator %q assigned twice", c.Operator)
		}
		seen[o] = true
		vi := -1
		for i, v := range p.Operators[o].Variants {
			if v.Name == c.Variant {
				vi = i
			}
		}
		if vi < 0 {
			bad("operator %q has no variant %q", c.Operator, c.Variant)
		}
		s.vars[o] = max(vi, 0)
		for _, wn := range c.Workers {
			w, ok := in.ix.workers[wn]
			if !ok {
				bad("operator %q: unknown worker %q", c.Operator, wn)
				continue
			}
			if prev, dup := used[w]; dup {
				bad("worker %q serves both %q and %q", wn, prev, c.Operator)
			}
			used[w] = c.Operator
			s.workers[o] = append(s.workers[o], w)
		}
	}
	for o, ok := range seen {
		if !ok {
			bad("operator %q not assigned", p.Operators[o].Name)
		}
	}
	return s, errors.Join(errs...)
}

// fill returns each worker's items/s under the fill rule: in order, each takes
// min(capacity, what is left).
func (in *instance) fill(o, v int, ws []int) (thr []float64, covered float64) {
	left := in.ix.demand[o]
	thr = make([]float64, len(ws))
	for i, w := range ws {
		t := min(in.caps[o][v][w], max(left, 0))
		thr[i] = t
		left -= t
		covered += t
	}
	return thr, covered
}

// evaluate prices s and lists its violations.
func (in *instance) evaluate(s sol) *Plan {
	p, ix := in.p, in.ix
	pl := &Plan{Operators: make([]OperatorPlan, 0, in.nOps)}
	var viol []string
	thr := make([][]float64, in.nOps)
	frac := 1.0
	for _, o := range ix.topo {
		v := s.vars[o]
		var covered float64
		thr[o], covered = in.fill(o, v, s.workers[o])
		d := ix.demand[o]
		for _, w := range s.workers[o] {
			if in.caps[o][v][w] <= 0 {
				viol = append(viol, fmt.Sprintf("worker %s cannot run %s/%s", p.Workers[w].Name, p.Operators[o].Name, p.Operators[o].Variants[v].Name))
			}
		}
		if covered < d-1e-6 {
			viol = append(viol, fmt.Sprintf("capacity: %s needs %.4g items/s, its workers give %.4g", p.Operators[o].Name, d, covered))
			if d > 0 {
				frac = min(frac, covered/d)
			}
		}
	}
	bw := map[[2]int]float64{} // MB/s per tier pair
	netOf := make([]float64, in.nOps)
	for _, o := range ix.topo {
		v := s.vars[o]
		for k, e := range ix.in[o] {
			if e.src >= 0 {
				kb := in.kb[o][k][0][v]
				for i, b := range s.workers[o] {
					j := e.src*in.nW + b
					if !in.sallowed[j] {
						viol = append(viol, fmt.Sprintf("A2: %s sends from %s (tier %s) down to %s (tier %s)", p.Operators[o].Name,
							p.Sources[e.src].Name, p.Sources[e.src].Tier, p.Workers[b].Name, p.Workers[b].Tier))
						continue
					}
					items := thr[o][i]
					netOf[o] += items * kb * in.slink[j]
					if ta, tb := ix.sourceTier[e.src], ix.workerTier[b]; ta != tb || p.Sources[e.src].Location != p.Workers[b].Location {
						bw[[2]int{ta, tb}] += items * kb / 1024
					}
				}
				continue
			}
			u := e.from
			tu := ix.demand[u]
			kb := in.kb[o][k][s.vars[u]][v]
			for i, a := range s.workers[u] {
				for j, b := range s.workers[o] {
					l := a*in.nW + b
					if !in.allowed[l] {
						viol = append(viol, fmt.Sprintf("A2: %s->%s sends from %s (tier %s) down to %s (tier %s)", p.Operators[u].Name,
							p.Operators[o].Name, p.Workers[a].Name, p.Workers[a].Tier, p.Workers[b].Name, p.Workers[b].Tier))
						continue
					}
					if tu <= 0 {
						continue
					}
					items := thr[u][i] * thr[o][j] / tu
					netOf[o] += items * kb * in.link[l]
					if ta, tb := ix.workerTier[a], ix.workerTier[b]; ta != tb || p.Workers[a].Location != p.Workers[b].Location {
						bw[[2]int{ta, tb}] += items * kb / 1024
					}
				}
			}
		}
	}
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
	acc := in.accuracies(s.vars)
	for _, o := range ix.topo {
		v := s.vars[o]
		op := OperatorPlan{Name: p.Operators[o].Name, Variant: p.Operators[o].Variants[v].Name, Demand: ix.demand[o],
			Accuracy: finite(acc[o]), NetworkCost: netOf[o]}
		for i, w := range s.workers[o] {
			op.ComputeCost += in.price[w]
			share := 0.0
			if ix.demand[o] > 0 {
				share = thr[o][i] / ix.demand[o]
			}
			ws := WorkerShare{Name: p.Workers[w].Name, Tier: p.Workers[w].Tier, Location: p.Workers[w].Location,
				Share: share, ItemsPerSec: thr[o][i], Capacity: in.caps[o][v][w]}
			in.unreserve(&ws, w)
			op.Workers = append(op.Workers, ws)
		}
		pl.ComputeCost += op.ComputeCost
		pl.NetworkCost += op.NetworkCost
		pl.Operators = append(pl.Operators, op)
	}
	pl.TotalCost = pl.ComputeCost + pl.NetworkCost
	sa := acc[ix.sink]
	pl.Accuracy = finite(sa)
	if !in.meetsAccuracy(sa) {
		if math.IsInf(sa, -1) {
			viol = append(viol, fmt.Sprintf("accuracy: no profile row covers the inputs of %s, target %.4g", p.Operators[ix.sink].Name, in.target))
		} else {
			viol = append(viol, fmt.Sprintf("accuracy: %.4g below the target %.4g", sa, in.target))
		}
	}
	pl.Throughput = ix.demand[ix.sink] * frac
	pl.Violations = viol
	pl.Feasible = len(viol) == 0
	return pl
}
