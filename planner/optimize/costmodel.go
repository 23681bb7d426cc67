package optimize

import "math"

// CostModel prices placements. Strategies and Evaluate call Prepare once per
// problem and then only the index-based Costs, so a model may precompute freely.
// Tests inject their own model (or wrap PrototypeModel) to force a choice.
//
// Every strategy relies on the shape of Eq. 1: a used worker costs a fixed price
// per hour, and network cost is linear in the items/s carried between two
// workers; a model must keep that shape (and non-negative values) for the
// exhaustive strategy's bounds to stay valid.
type CostModel interface {
	Prepare(p *Problem) (Costs, error)
}

// Costs are a prepared model. Indices refer to the Problem's slices: op into
// Operators, variant into that operator's Variants, worker into Workers, src
// into Sources.
type Costs interface {
	// Capacity is the items/s the worker sustains for the variant; 0 means it
	// cannot run it.
	Capacity(op, variant, worker int) float64
	// Price is the cost per hour of using the worker at all.
	Price(worker int) float64
	// Link is the cost per hour of carrying 1 item/s of 1 KB from worker from to
	// worker to; ok is false when the flow is forbidden (A2).
	Link(from, to int) (perItemKB float64, ok bool)
	// SourceLink is Link from a source to a worker.
	SourceLink(src, to int) (perItemKB float64, ok bool)
}

// PrototypeModel is the JellyBean prototype's cost model (see the reference
// README), extended with TCoeff and tier-level link defaults:
//   - capacity = TCoeff x 1000 / latency_ms; price = TCoeff x hourly price (a
//     worker in a tier with several locations stands for one machine per
//     location, each serving its location's share and each paid for);
//   - link cost per item/s per KB = CommCostScaling x multiplier x 3600 / 1024^2,
//     with the multiplier looked up as Problem documents; flows to a lower tier
//     are forbidden (A2), flows within a tier and location are free (A1).
//
// Strict keeps the published prototype's own rules where tierflow's differ on
// purpose (planner/README.md, "jellybean: the prototype's rules, and
// tierflow's"): a worker costs its own price whatever its tier's TCoeff
// (TCoeff scales capacity only, as in Algorithm 1), and traffic within a tier
// is free whatever the locations. The jellybean strategy searches under it.
type PrototypeModel struct {
	Strict bool
}

// KBPerSecToGBPerHour converts items/s x KB into GB per hour.
const KBPerSecToGBPerHour = 3600.0 / (1024 * 1024)

// Prepare indexes the problem for fast lookups.
func (m PrototypeModel) Prepare(p *Problem) (Costs, error) {
	ix, err := indexProblem(p)
	if err != nil {
		return nil, err
	}
	c := &protoCosts{ix: ix, strict: m.Strict}
	nw, no := len(p.Workers), len(p.Operators)
	c.tcoeff = make([]float64, nw)
	for w := range p.Workers {
		c.tcoeff[w] = ix.tcoeff[ix.workerTier[w]]
	}
	c.caps = make([][][]float64, no)
	for o := range p.Operators {
		op := &p.Operators[o]
		c.caps[o] = make([][]float64, len(op.Variants))
		for v := range op.Variants {
			row := make([]float64, nw)
			for w := range p.Workers {
				lat, ok := op.Variants[v].LatencyMs[p.Workers[w].Name]
				if !ok && p.Workers[w].Type != "" {
					lat, ok = op.Variants[v].LatencyMs[p.Workers[w].Type]
				}
				if ok && lat > 0 && !math.IsInf(lat, 0) {
					row[w] = c.tcoeff[w] * 1000 / lat
				}
			}
			c.caps[o][v] = row
		}
	}
	scale := p.CommCostScaling
	if scale == 0 {
		scale = 1
	}
	c.link = make([]float64, nw*nw)
	c.allowed = make([]bool, nw*nw)
	wl := make(map[[2]string]float64, len(p.WorkerLinks))
	for _, l := range p.WorkerLinks {
		wl[[2]string{l.From, l.To}] = l.Multiplier
	}
	for a := range p.Workers {
		for b := range p.Workers {
			mult, ok := wl[[2]string{p.Workers[a].Name, p.Workers[b].Name}]
			i := a*nw + b
			c.link[i], c.allowed[i] = linkRule(ix, scale, ix.workerTier[a], p.Workers[a].Location, b, mult, ok, c.strict)
		}
	}
	ns := len(p.Sources)
	c.slink = make([]float64, ns*nw)
	c.sallowed = make([]bool, ns*nw)
	sl := make(map[[2]string]float64, len(p.SourceLinks))
	for _, l := range p.SourceLinks {
		sl[[2]string{l.Source, l.Worker}] = l.Multiplier
	}
	for s := range p.Sources {
		for b := range p.Workers {
			mult, ok := sl[[2]string{p.Sources[s].Name, p.Workers[b].Name}]
			i := s*nw + b
			c.slink[i], c.sallowed[i] = linkRule(ix, scale, ix.sourceTier[s], p.Sources[s].Location, b, mult, ok, c.strict)
		}
	}
	return c, nil
}

// linkRule is the one rule for traffic from a sender (a worker or a source) in
// tier `from` at location loc to worker b: a lower tier is forbidden (A2); the
// same tier and location is free (A1); otherwise the pair's own multiplier
// when it has one (m, ok), else the tiers' default, in cost per KB/s per hour.
// strict: the same tier is free whatever the locations (the prototype's rule).
func linkRule(ix *index, scale float64, from int, loc string, b int, m float64, ok, strict bool) (cost float64, allowed bool) {
	to := ix.workerTier[b]
	if to < from {
		return 0, false
	}
	if to == from && (strict || loc == ix.p.Workers[b].Location) {
		return 0, true
	}
	if !ok {
		m = ix.tierMult[from][to]
	}
	return scale * m * KBPerSecToGBPerHour, true
}

type protoCosts struct {
	ix                *index
	strict            bool
	tcoeff            []float64
	caps              [][][]float64
	link, slink       []float64
	allowed, sallowed []bool
}

func (c *protoCosts) Capacity(op, variant, worker int) float64 {
	return c.caps[op][variant][worker]
}

func (c *protoCosts) Price(worker int) float64 {
	if c.strict {
		return c.ix.p.Workers[worker].Price
	}
	return c.tcoeff[worker] * c.ix.p.Workers[worker].Price
}

func (c *protoCosts) Link(from, to int) (float64, bool) {
	i := from*len(c.ix.p.Workers) + to
	return c.link[i], c.allowed[i]
}

func (c *protoCosts) SourceLink(src, to int) (float64, bool) {
	i := src*len(c.ix.p.Workers) + to
	return c.slink[i], c.sallowed[i]
}

// TCoeff is JellyBean's throughput coefficient of tier t (index into Tiers):
// the product of the Locations fan-outs from t up to the top tier.
func TCoeff(p *Problem, t int) float64 {
	k := 1.0
	for i := max(t, 0); i < len(p.Tiers); i++ {
		if n := p.Tiers[i].Locations; n > 1 {
			k *= float64(n)
		}
	}
	return k
}
