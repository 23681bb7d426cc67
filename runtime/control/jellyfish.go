package control

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// The Jellyfish scheduler (Jellyfish section 4): given the clients of a
// latency-bound query (request rate, SLO, upload bandwidth) and a zoo of
// variants ordered by size (input size, accuracy, latency by batch size),
// choose one variant per worker, the batch size each runs, and which
// clients each serves, so that as many clients as possible meet their SLO
// (O1) and, among those plans, the rate-weighted accuracy is highest (O2,
// eq. 2). A client is sent the input size of its variant (data
// adaptation aligned with model adaptation, 3.1), so its network time, and
// with it its compute budget, depends on the variant it is mapped to.

// JFVariant is one variant of the zoo.
type JFVariant struct {
	Name string
	// Side is its input size in pixels (a frame is sent at Side x Side).
	Side int
	// Bytes is what one request at its input size puts on the link.
	Bytes float64
	// Accuracy in [0, 1].
	Accuracy float64
	// BatchMs[b-1] is the latency of one call of b rows, in ms, for b in
	// 1..len(BatchMs) (non-decreasing).
	BatchMs []float64
}

// Throughput is b / l(b), requests per second.
func (v JFVariant) Throughput(b int) float64 { return float64(b) / v.BatchMs[b-1] * 1000 }

// JFClient is one client (a source link).
type JFClient struct {
	Name string
	// Rate is requests per second; SLOMs the end-to-end bound.
	Rate  float64
	SLOMs float64
	// BandwidthBps is the link's estimated upload bandwidth (bytes per
	// second, the relay's ack estimate); RTTMs its propagation round trip.
	BandwidthBps float64
	RTTMs        float64
	// QueueMs is the queueing the client expects before compute beyond the
	// batch wait the scheduler already counts (dispatch, decode).
	QueueMs float64
	// MaxUtilization, when > 0, caps the share of BandwidthBps the client's
	// requests may take (Rate x bytes): the paper's network time assumes
	// the link carries the stream, and a stream at or over its capacity
	// queues without bound, however small each request's own time.
	MaxUtilization float64
}

// JFProblem is one scheduling round.
type JFProblem struct {
	Variants []JFVariant // smallest (fastest, least accurate) first
	Clients  []JFClient
	Workers  int
}

// BudgetMs is L_ij: client i's compute budget on variant j, its SLO less
// the network time of a request at j's input size (eq. 1: s/W + RTT) and
// the queueing it expects.
func (p *JFProblem) BudgetMs(i, j int) float64 {
	c := p.Clients[i]
	net := c.RTTMs
	if c.BandwidthBps > 0 {
		net += p.Variants[j].Bytes / c.BandwidthBps * 1000
	} else {
		net = math.Inf(1)
	}
	if c.MaxUtilization > 0 && c.Rate*p.Variants[j].Bytes > c.MaxUtilization*c.BandwidthBps {
		return math.Inf(-1)
	}
	return c.SLOMs - net - c.QueueMs
}

// maxBatch is the largest batch size b of variant j with 2 l_j(b) <= budget
// (eq. 6: a request may wait behind one batch, then run in its own), 0 when
// none.
func (p *JFProblem) maxBatch(j int, budget float64) int {
	v := p.Variants[j]
	b := 0
	for k := 1; k <= len(v.BatchMs); k++ {
		if 2*v.BatchMs[k-1] <= budget {
			b = k
		}
	}
	return b
}

// JFWorker is one worker's part of a schedule.
type JFWorker struct {
	Variant int
	Batch   int
	Clients []int
}

// JFSchedule is the scheduler's answer: per worker its variant, batch size
// and clients; per client its worker (-1: not served, it will miss).
type JFSchedule struct {
	Workers []JFWorker
	Client  []int
	// Served is the share of clients mapped (O1), Accuracy the rate-weighted
	// accuracy over all clients, unserved ones counting 0 (O2, eq. 2).
	Served   float64
	Accuracy float64
}

// Variant is the variant client i is mapped to, -1 when none.
func (s *JFSchedule) Variant(i int) int {
	if w := s.Client[i]; w >= 0 {
		return s.Workers[w].Variant
	}
	return -1
}

// rateStep is the DP's rate resolution (requests per second): rates are
// rounded up to it, so a mapping it finds never overloads a worker.
const rateStep = 0.5

// findClients is FindOptimalClients (Algorithm 1): of the clients in cand,
// the subset of the largest total rate that variant j can serve within
// every member's budget, by a 0-1 knapsack over rate sums whose capacity
// shrinks with each client (clients in decreasing budget: a client's
// largest feasible batch bounds the throughput of every subset it closes).
// It returns the subset and the batch size to run.
func (p *JFProblem) findClients(j int, cand []int) ([]int, int) {
	type row struct {
		i    int
		cap  float64
		bmax int
		w    int
	}
	var rows []row
	v := p.Variants[j]
	for _, i := range cand {
		bmax := p.maxBatch(j, p.BudgetMs(i, j))
		if bmax == 0 {
			continue
		}
		rows = append(rows, row{i: i, cap: v.Throughput(bmax), bmax: bmax, w: int(math.Ceil(p.Clients[i].Rate/rateStep - 1e-9))})
	}
	if len(rows) == 0 {
		return nil, 0
	}
	sort.SliceStable(rows, func(a, b int) bool { return rows[a].cap > rows[b].cap })
	// No subset sums to more than all the candidates: a fast variant's
	// throughput (a million rows a second for a small model) must not size
	// the table.
	total := 0
	for _, r := range rows {
		total += r.w
	}
	cols := min(int(rows[0].cap/rateStep), total) + 1
	reach := make([]bool, cols)
	reach[0] = true
	take := make([][]bool, len(rows))
	for k, r := range rows {
		take[k] = make([]bool, cols)
		limit := min(cols-1, int(r.cap/rateStep))
		for s := limit; s >= r.w; s-- {
			if !reach[s] && reach[s-r.w] {
				reach[s] = true
				take[k][s] = true
			}
		}
	}
	best := 0
	for s := cols - 1; s > 0; s-- {
		if reach[s] {
			best = s
			break
		}
	}
	if best == 0 {
		return nil, 0
	}
	var out []int
	bmax := math.MaxInt
	for k, s := len(rows)-1, best; k >= 0 && s > 0; k-- {
		if take[k][s] {
			out = append(out, rows[k].i)
			bmax = min(bmax, rows[k].bmax)
			s -= rows[k].w
		}
	}
	sort.Ints(out)
	// The smallest batch that carries the total keeps latency lowest.
	need := float64(best) * rateStep
	b := bmax
	for k := 1; k <= bmax; k++ {
		if v.Throughput(k) >= need {
			b = k
			break
		}
	}
	return out, b
}

// MapClients is Algorithm 1's MapClients: the workers' variants (one
// each) are filled most accurate first, each with the clients of the
// largest total rate it can serve among those left.
func (p *JFProblem) MapClients(set []int) *JFSchedule {
	s := &JFSchedule{Workers: make([]JFWorker, len(set)), Client: make([]int, len(p.Clients))}
	for i := range s.Client {
		s.Client[i] = -1
	}
	order := make([]int, len(set))
	for k := range order {
		order[k] = k
		s.Workers[k] = JFWorker{Variant: set[k], Batch: 1}
	}
	sort.SliceStable(order, func(a, b int) bool {
		return p.Variants[set[order[a]]].Accuracy > p.Variants[set[order[b]]].Accuracy
	})
	left := make([]int, len(p.Clients))
	for i := range left {
		left[i] = i
	}
	for _, k := range order {
		got, b := p.findClients(set[k], left)
		if len(got) == 0 {
			continue
		}
		s.Workers[k].Clients, s.Workers[k].Batch = got, b
		for _, i := range got {
			s.Client[i] = k
		}
		left = slicesDelete(left, got)
	}
	p.score(s)
	return s
}

func slicesDelete(from, drop []int) []int {
	out := from[:0:0]
	for _, x := range from {
		if !containsInt(drop, x) {
			out = append(out, x)
		}
	}
	return out
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// score fills O1 and O2.
func (p *JFProblem) score(s *JFSchedule) {
	var served int
	var acc, rate float64
	for i, c := range p.Clients {
		rate += c.Rate
		if w := s.Client[i]; w >= 0 {
			served++
			acc += c.Rate * p.Variants[s.Workers[w].Variant].Accuracy
		}
	}
	if len(p.Clients) > 0 {
		s.Served = float64(served) / float64(len(p.Clients))
	}
	if rate > 0 {
		s.Accuracy = acc / rate
	}
}

// JFAnneal are the simulated annealing parameters (4.3); the paper's
// values are DefaultJFAnneal.
type JFAnneal struct {
	T0, TMin, Alpha float64
	Seed            uint64
}

// DefaultJFAnneal: T = 0.0125 cooling by 0.99 to 0.0005 (about 320
// rounds), the paper's simulation values.
var DefaultJFAnneal = JFAnneal{T0: 0.0125, TMin: 0.0005, Alpha: 0.99, Seed: 1}

// Schedule is Algorithm 2: simulated annealing over the workers' variant
// multiset, each candidate scored by MapClients. It starts from prev (the
// running set; nil: every worker on the smallest variant) in DEGRADE mode,
// stepping variants down until every client is served or no step helps,
// then UPGRADE: neighbours step each worker's variant up or down by one at
// random; a neighbour that serves fewer clients is dropped, a more
// accurate one taken, a less accurate one taken with probability
// exp(diff/T). The best schedule seen is returned.
func (p *JFProblem) Schedule(prev []int, a JFAnneal) *JFSchedule {
	k := p.Workers
	if k < 1 || len(p.Variants) == 0 {
		return &JFSchedule{Client: fill(len(p.Clients), -1)}
	}
	rng := rand.New(rand.NewPCG(a.Seed, 0x6a656c6c79))
	cur := make([]int, k)
	if len(prev) == k {
		copy(cur, prev)
	}
	sort.Ints(cur)
	// A multiset comes up again and again as the walk goes back and
	// forth; its mapping does not change within a round.
	memo := map[string]*JFSchedule{}
	mapClients := func(set []int) *JFSchedule {
		key := fmt.Sprint(set)
		if s, ok := memo[key]; ok {
			return s
		}
		s := p.MapClients(set)
		memo[key] = s
		return s
	}
	curS := mapClients(cur)
	best := curS
	better := func(x, y *JFSchedule) bool {
		return x.Served > y.Served || (x.Served == y.Served && x.Accuracy > y.Accuracy+1e-12)
	}
	// DEGRADE: smaller variants serve more clients (lower latency, fewer
	// bytes); stop as soon as everyone is served.
	for guard := 0; curS.Served < 1 && guard < 4*k*len(p.Variants); guard++ {
		next := append([]int(nil), cur...)
		moved := false
		for w := range next {
			if next[w] > 0 && rng.IntN(2) == 0 {
				next[w]--
				moved = true
			}
		}
		if !moved {
			if allZero(cur) {
				break
			}
			continue
		}
		sort.Ints(next)
		ns := mapClients(next)
		if ns.Served >= curS.Served {
			cur, curS = next, ns
			if better(curS, best) {
				best = curS
			}
		}
	}
	// UPGRADE.
	for t := a.T0; t > a.TMin; t *= a.Alpha {
		next := append([]int(nil), cur...)
		for w := range next {
			switch rng.IntN(3) {
			case 0:
				if next[w]+1 < len(p.Variants) {
					next[w]++
				}
			case 1:
				if next[w] > 0 {
					next[w]--
				}
			}
		}
		sort.Ints(next)
		ns := mapClients(next)
		if ns.Served < curS.Served {
			continue
		}
		diff := ns.Accuracy - curS.Accuracy
		if diff > 0 || ns.Served > curS.Served || rng.Float64() < math.Exp(diff/t) {
			cur, curS = next, ns
			if better(curS, best) {
				best = curS
			}
		}
	}
	return best
}

func fill(n, v int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func allZero(xs []int) bool {
	for _, x := range xs {
		if x != 0 {
			return false
		}
	}
	return true
}

// Exhaustive is the exact answer for small cases: every multiset of
// variants over the workers, every assignment of clients to workers (or
// to none) and the batch sizes that make it feasible; the best by (O1,
// O2). It is the yardstick Schedule is tested against.
func (p *JFProblem) Exhaustive() *JFSchedule {
	k, n := p.Workers, len(p.Clients)
	var best *JFSchedule
	set := make([]int, k)
	var sets func(pos, from int)
	assign := make([]int, n)
	sets = func(pos, from int) {
		if pos == k {
			var rec func(i int)
			rec = func(i int) {
				if i == n {
					s := p.feasible(set, assign)
					if s != nil && (best == nil || s.Served > best.Served || (s.Served == best.Served && s.Accuracy > best.Accuracy+1e-12)) {
						best = s
					}
					return
				}
				for w := -1; w < k; w++ {
					assign[i] = w
					rec(i + 1)
				}
			}
			rec(0)
			return
		}
		for j := from; j < len(p.Variants); j++ {
			set[pos] = j
			sets(pos+1, j)
		}
	}
	sets(0, 0)
	return best
}

// feasible scores an explicit assignment, nil when some worker cannot
// serve its clients at any batch size.
func (p *JFProblem) feasible(set, assign []int) *JFSchedule {
	s := &JFSchedule{Workers: make([]JFWorker, len(set)), Client: append([]int(nil), assign...)}
	for w, j := range set {
		s.Workers[w] = JFWorker{Variant: j, Batch: 1}
		var rate float64
		budget := math.Inf(1)
		for i, x := range assign {
			if x == w {
				rate += math.Ceil(p.Clients[i].Rate/rateStep-1e-9) * rateStep
				budget = math.Min(budget, p.BudgetMs(i, j))
				s.Workers[w].Clients = append(s.Workers[w].Clients, i)
			}
		}
		if len(s.Workers[w].Clients) == 0 {
			continue
		}
		ok := false
		for b := 1; b <= p.maxBatch(j, budget); b++ {
			if p.Variants[j].Throughput(b) >= rate {
				s.Workers[w].Batch, ok = b, true
				break
			}
		}
		if !ok {
			return nil
		}
	}
	p.score(s)
	return s
}
