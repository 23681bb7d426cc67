package optimize

import (
	"math"
	"strconv"
	"strings"
)

// partial is a partly built placement for the greedy strategies (Algorithm 1
// and the baselines): operators decided so far, in any topological prefix.
type partial struct {
	ws   [][]int     // per operator; nil = not decided
	thr  [][]float64 // items/s per worker, fill order
	used []bool      // per worker
	bw   []float64   // MB/s per tier pair
	cost float64
}

func newPartial(in *instance) *partial {
	nt := len(in.p.Tiers)
	return &partial{ws: make([][]int, in.nOps), thr: make([][]float64, in.nOps), used: make([]bool, in.nW), bw: make([]float64, nt*nt)}
}

func (s *partial) clone() *partial {
	c := &partial{ws: append([][]int(nil), s.ws...), thr: append([][]float64(nil), s.thr...),
		used: append([]bool(nil), s.used...), bw: append([]float64(nil), s.bw...), cost: s.cost}
	return c
}

// key identifies the placement, for de-duplicating beams.
func (s *partial) key() string {
	var sb strings.Builder
	for _, ws := range s.ws {
		for _, w := range ws {
			sb.WriteString(strconv.Itoa(w))
			sb.WriteByte(',')
		}
		sb.WriteByte('|')
	}
	return sb.String()
}

// incoming is Eq. 2's communication term: the network cost per item into o
// (variant v, parents' variants in vars) received on worker w, from sources and
// decided parents; ok is false when A2 forbids w.
func (in *instance) incoming(o, v, w int, vars []int, s *partial) (float64, bool) {
	n := in.nW
	net := 0.0
	for k, e := range in.ix.in[o] {
		if e.src >= 0 {
			j := e.src*n + w
			if !in.sallowed[j] {
				return 0, false
			}
			net += in.kb[o][k][0][v] * in.slink[j]
			continue
		}
		u := e.from
		tu := in.ix.demand[u]
		kb := in.kb[o][k][vars[u]][v]
		for i, a := range s.ws[u] {
			if !in.allowed[a*n+w] {
				return 0, false
			}
			if tu > 0 {
				net += s.thr[u][i] / tu * kb * in.link[a*n+w]
			}
		}
	}
	return net, true
}

// place commits workers ws (fill order) for o in s: fills them, adds compute,
// network and bandwidth; false when a bandwidth cap breaks or they fall short.
func (in *instance) place(o, v int, ws []int, vars []int, s *partial) bool {
	T := in.ix.demand[o]
	thr := make([]float64, len(ws))
	left := T
	for i, w := range ws {
		thr[i] = min(in.caps[o][v][w], max(left, 0))
		left -= thr[i]
		s.cost += in.price[w]
		s.used[w] = true
	}
	if left > 1e-6 {
		return false
	}
	nt := len(in.p.Tiers)
	ok := true
	addBW := func(ta, tb int, mb float64) {
		s.bw[ta*nt+tb] += mb
		if c := in.ix.tierBW[ta][tb]; c > 0 && s.bw[ta*nt+tb] > c*(1+1e-9) {
			ok = false
		}
	}
	n := in.nW
	for k, e := range in.ix.in[o] {
		if e.src >= 0 {
			kb := in.kb[o][k][0][v]
			for i, w := range ws {
				s.cost += thr[i] * kb * in.slink[e.src*n+w]
				ta, tb := in.ix.sourceTier[e.src], in.ix.workerTier[w]
				if ta != tb || in.p.Sources[e.src].Location != in.p.Workers[w].Location {
					addBW(ta, tb, thr[i]*kb/1024)
				}
			}
			continue
		}
		u := e.from
		tu := in.ix.demand[u]
		if tu <= 0 {
			continue
		}
		kb := in.kb[o][k][vars[u]][v]
		for i, a := range s.ws[u] {
			for j, w := range ws {
				items := s.thr[u][i] * thr[j] / tu
				s.cost += items * kb * in.link[a*n+w]
				ta, tb := in.ix.workerTier[a], in.ix.workerTier[w]
				if ta != tb || in.p.Workers[a].Location != in.p.Workers[w].Location {
					addBW(ta, tb, items*kb/1024)
				}
			}
		}
	}
	s.ws[o], s.thr[o] = ws, thr
	return ok
}

// greedyFill picks workers for o one at a time, each the minimum of score among
// the free workers that can run v and that A2 allows, restricted by keep, until
// their capacities cover the demand; nil when they cannot. score sees the
// worker, its incoming network cost per item and the demand still uncovered.
func (in *instance) greedyFill(o, v int, vars []int, s *partial, keep func(w int) bool, score func(w int, net, left float64) float64) []int {
	T := in.ix.demand[o]
	type c struct {
		w   int
		net float64
	}
	var cs []c
	for w := range in.nW {
		if s.used[w] || in.caps[o][v][w] <= 0 || !keep(w) {
			continue
		}
		net, ok := in.incoming(o, v, w, vars, s)
		if !ok {
			continue
		}
		cs = append(cs, c{w, net})
	}
	var ws []int
	left := T
	for left > eps {
		bi, bs := -1, math.Inf(1)
		for i, x := range cs {
			if x.w < 0 {
				continue
			}
			if sc := score(x.w, x.net, left); bi < 0 || sc < bs {
				bi, bs = i, sc
			}
		}
		if bi < 0 {
			return nil
		}
		w := cs[bi].w
		cs[bi].w = -1
		ws = append(ws, w)
		left -= in.caps[o][v][w]
	}
	if ws == nil {
		ws = []int{}
	}
	return ws
}

// mostAccurate is the variant combination with the highest sink accuracy (the
// lowest total proxy cost among ties).
func (in *instance) mostAccurate() []int {
	var best []int
	bestAcc, bestCost := math.Inf(-1), math.Inf(1)
	in.combos(func(vars []int) bool {
		a := in.sinkAccuracy(vars)
		c := 0.0
		for o, v := range vars {
			c += in.p.Operators[o].Variants[v].ProxyCost
		}
		if a > bestAcc+eps || (a > bestAcc-eps && c < bestCost) {
			best, bestAcc, bestCost = append([]int(nil), vars...), a, c
		}
		return true
	})
	return best
}

func (s *partial) sol(vars []int) sol {
	return sol{vars: append([]int(nil), vars...), workers: s.ws}.clone()
}

func varsKey(v []int) string {
	var sb strings.Builder
	for _, x := range v {
		sb.WriteString(strconv.Itoa(x))
		sb.WriteByte(',')
	}
	return sb.String()
}

func floatsKey(v []float64) string {
	var sb strings.Builder
	for _, x := range v {
		sb.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
		sb.WriteByte(',')
	}
	return sb.String()
}
