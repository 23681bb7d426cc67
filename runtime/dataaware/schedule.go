package dataaware

import (
	"math"
	"sort"
)

// Model is a candidate model of an application (SneakPeek 3.1): its
// profiled accuracy (0..1), its recall per class (0..1, in the
// application's class order; nil: none profiled) and its batch latency
// Fixed + n*PerItem (in the problem's time unit), measured on the worker.
// The short-circuit candidate (5.3.1) is the estimator's own answer: its
// latency is 0, its accuracy the estimator's profiled accuracy.
type Model struct {
	Name           string
	Accuracy       float64
	Recall         []float64
	Fixed, PerItem float64
	ShortCircuit   bool
}

// Latency of a batch of n requests.
func (m *Model) Latency(n int) float64 {
	if m.ShortCircuit || n == 0 {
		return 0
	}
	return m.Fixed + float64(n)*m.PerItem
}

// App is an application: its candidate models and its penalty.
type App struct {
	Name    string
	Models  []*Model
	Penalty Penalty
}

// Request is one inference request: its application, arrival and absolute
// deadline, and (for data-aware policies) the SneakPeek evidence of its row:
// votes over the application's classes (k nearest neighbours' labels).
type Request struct {
	App               int
	Arrival, Deadline float64
	Votes             []float64
}

// Theta is the SneakPeek probabilities of requests reqs together: the
// posterior mean of a Jeffreys prior and their pooled votes (eq. 11); nil
// when they carry none.
func (p *Problem) Theta(reqs []int) []float64 {
	var th []float64
	for _, i := range reqs {
		v := p.Requests[i].Votes
		if v == nil {
			return nil
		}
		if th == nil {
			th = make([]float64, len(v))
			for c := range th {
				th[c] = Jeffreys
			}
		}
		for c, x := range v {
			if c < len(th) {
				th[c] += x
			}
		}
	}
	var sum float64
	for _, x := range th {
		sum += x
	}
	for c := range th {
		th[c] /= sum
	}
	return th
}

// Batch runs requests (indexes into Problem.Requests) of one application on
// one of its models.
type Batch struct {
	App, Model int
	Requests   []int
}

// Problem is one scheduling window: the requests that arrived, scheduled at
// Now on one worker that runs one batch at a time.
type Problem struct {
	Apps     []*App
	Requests []*Request
	Now      float64
}

// Scheduler is a request-scheduling policy of SneakPeek 5/6.1: it assigns
// each request a model and orders the batches.
type Scheduler interface {
	Name() string
	Schedule(p *Problem) []Batch
}

// Completion returns each request's completion time when the batches run
// back to back from p.Now.
func Completion(p *Problem, s []Batch) []float64 {
	end := make([]float64, len(p.Requests))
	t := p.Now
	for _, b := range s {
		t += p.Apps[b.App].Models[b.Model].Latency(len(b.Requests))
		for _, r := range b.Requests {
			end[r] = t
		}
	}
	return end
}

// accuracy of model m on a batch whose SneakPeek probabilities are theta:
// data-aware (sum_c theta_c recall_c, eq. 9) when aware and both are
// known, else profiled. The short-circuit model keeps its profiled
// accuracy (5.3.1: it must not estimate its own accuracy).
func accuracy(theta []float64, m *Model, aware bool) float64 {
	if !aware || m.ShortCircuit || theta == nil || len(m.Recall) != len(theta) {
		return m.Accuracy
	}
	var s float64
	for c, th := range theta {
		s += th * m.Recall[c]
	}
	return s
}

// ExpectedUtility is a schedule's mean expected utility (eq. 3), with
// data-aware accuracies when aware.
func ExpectedUtility(p *Problem, s []Batch, aware bool) float64 {
	if len(p.Requests) == 0 {
		return 0
	}
	end := Completion(p, s)
	var u float64
	for _, b := range s {
		a := p.Apps[b.App]
		var th []float64
		if aware {
			th = p.Theta(b.Requests)
		}
		acc := accuracy(th, a.Models[b.Model], aware)
		for _, i := range b.Requests {
			r := p.Requests[i]
			u += a.Penalty.Utility(acc, r.Deadline-r.Arrival, end[i]-r.Arrival)
		}
	}
	return u / float64(len(p.Requests))
}

// edf is the requests' indexes by deadline (then arrival, then index).
func edf(p *Problem) []int {
	idx := make([]int, len(p.Requests))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		ra, rb := p.Requests[idx[a]], p.Requests[idx[b]]
		if ra.Deadline != rb.Deadline {
			return ra.Deadline < rb.Deadline
		}
		return ra.Arrival < rb.Arrival
	})
	return idx
}

// appendRequest adds request i on model m, joining the last batch when it
// is the same application and model (batching only as requests happen to
// line up: the baselines' opportunistic batching).
func appendRequest(s []Batch, app, m, i int) []Batch {
	if k := len(s) - 1; k >= 0 && s[k].App == app && s[k].Model == m {
		s[k].Requests = append(s[k].Requests, i)
		return s
	}
	return append(s, Batch{App: app, Model: m, Requests: []int{i}})
}

// MaxAccEDF runs requests by earliest deadline, each on its application's
// most accurate model (profiled).
type MaxAccEDF struct{}

func (MaxAccEDF) Name() string { return "maxacc-edf" }

func (MaxAccEDF) Schedule(p *Problem) []Batch {
	var s []Batch
	for _, i := range edf(p) {
		a := p.Requests[i].App
		best := -1
		for m, mod := range p.Apps[a].Models {
			if mod.ShortCircuit {
				continue
			}
			if best < 0 || mod.Accuracy > p.Apps[a].Models[best].Accuracy {
				best = m
			}
		}
		s = appendRequest(s, a, best, i)
	}
	return s
}

// LOEDF runs requests by earliest deadline, each on the model of the
// highest utility at the time it would start (locally optimal, eq. 13,
// profiled accuracy).
type LOEDF struct{}

func (LOEDF) Name() string { return "lo-edf" }

func (LOEDF) Schedule(p *Problem) []Batch {
	var s []Batch
	t := p.Now
	for _, i := range edf(p) {
		r := p.Requests[i]
		a := p.Apps[r.App]
		best, bestU, bestEnd := -1, math.Inf(-1), 0.0
		for m, mod := range a.Models {
			if mod.ShortCircuit {
				continue
			}
			end := t + mod.Latency(1)
			if k := len(s) - 1; k >= 0 && s[k].App == r.App && s[k].Model == m {
				end = t + mod.PerItem // joins the batch that runs last
			}
			if u := a.Penalty.Utility(mod.Accuracy, r.Deadline-r.Arrival, end-r.Arrival); u > bestU {
				best, bestU, bestEnd = m, u, end
			}
		}
		s = appendRequest(s, r.App, best, i)
		t = bestEnd
	}
	return s
}

// Grouped is Algorithm 1: requests grouped by application (SneakPeek also
// tries them split by estimated class), each group one batch on one model;
// with at most Threshold groups the best order and models are found by
// brute force, else groups run by mean priority (eq. 14) each on the model
// of the best mean utility.
type Grouped struct {
	Threshold int
	// Aware uses data-aware accuracy, splits groups by estimated class
	// (theta > 0.5, 5.3.2) and offers the short-circuit model: SneakPeek.
	Aware bool
}

func (g Grouped) Name() string {
	if g.Aware {
		return "sneakpeek"
	}
	return "grouped"
}

type group struct {
	app   int
	reqs  []int
	prio  float64
	theta []float64 // pooled SneakPeek probabilities (Aware)
}

func (g Grouped) groups(p *Problem, split bool) []*group {
	type key struct{ app, class int }
	by := map[key]*group{}
	var out []*group
	for i, r := range p.Requests {
		k := key{r.App, -1}
		if split {
			for c, th := range p.Theta([]int{i}) {
				if th > 0.5 {
					k.class = c
				}
			}
		}
		gr := by[k]
		if gr == nil {
			gr = &group{app: r.App}
			by[k] = gr
			out = append(out, gr)
		}
		gr.reqs = append(gr.reqs, i)
	}
	if split {
		out = g.merge(p, out)
	}
	// Priority (eq. 12): (1 + Var[accuracy of the app's models]) e^-d, d
	// the time left in units of the window's mean deadline (the paper's
	// seconds would make e^-d flat at millisecond deadlines).
	var mean float64
	for _, r := range p.Requests {
		mean += r.Deadline - p.Now
	}
	mean = math.Max(mean/float64(max(len(p.Requests), 1)), 1e-12)
	for _, gr := range out {
		v := g.variance(p, gr.app)
		for _, i := range gr.reqs {
			gr.prio += (1 + v) * math.Exp(-(p.Requests[i].Deadline-p.Now)/mean)
		}
		gr.prio /= float64(len(gr.reqs))
		if g.Aware {
			gr.theta = p.Theta(gr.reqs)
		}
		sort.SliceStable(gr.reqs, func(a, b int) bool { return p.Requests[gr.reqs[a]].Deadline < p.Requests[gr.reqs[b]].Deadline })
	}
	return out
}

// merge joins an application's class subgroups that would run on the same
// variant anyway (the one of the highest data-aware accuracy on each, the
// short-circuit aside): a split only pays where classes want different
// variants, and every extra batch costs a variant's fixed latency. It
// also keeps the group count within the exact search's threshold more
// often.
func (g Grouped) merge(p *Problem, gs []*group) []*group {
	type key struct{ app, model int }
	by := map[key]*group{}
	var out []*group
	for _, gr := range gs {
		th := p.Theta(gr.reqs)
		best, bestA := -1, math.Inf(-1)
		for m, mod := range p.Apps[gr.app].Models {
			if mod.ShortCircuit {
				continue
			}
			if a := accuracy(th, mod, g.Aware); a > bestA {
				best, bestA = m, a
			}
		}
		k := key{gr.app, best}
		if m := by[k]; m != nil {
			m.reqs = append(m.reqs, gr.reqs...)
			continue
		}
		by[k] = gr
		out = append(out, gr)
	}
	return out
}

func (g Grouped) variance(p *Problem, app int) float64 {
	var xs []float64
	for _, m := range p.Apps[app].Models {
		if !m.ShortCircuit || g.Aware {
			xs = append(xs, m.Accuracy)
		}
	}
	var mu, v float64
	for _, x := range xs {
		mu += x
	}
	mu /= float64(max(len(xs), 1))
	for _, x := range xs {
		v += (x - mu) * (x - mu)
	}
	return v / float64(max(len(xs), 1))
}

func (g Grouped) usable(m *Model) bool { return g.Aware || !m.ShortCircuit }

// utility of running group gr on model m starting at t: the sum over its
// requests, and the time it ends.
func (g Grouped) utility(p *Problem, gr *group, m int, t float64) (float64, float64) {
	a := p.Apps[gr.app]
	mod := a.Models[m]
	end := t + mod.Latency(len(gr.reqs))
	acc := accuracy(gr.theta, mod, g.Aware)
	var u float64
	for _, i := range gr.reqs {
		r := p.Requests[i]
		u += a.Penalty.Utility(acc, r.Deadline-r.Arrival, end-r.Arrival)
	}
	return u, end
}

func (g Grouped) Schedule(p *Problem) []Batch {
	s := g.schedule(p, g.groups(p, false))
	if !g.Aware {
		return s
	}
	// Split by estimated class when that is worth it: the paper finds most
	// optimal schedules group by application and almost all others by
	// class within one (5.3.2), so both groupings are planned and the one
	// of the higher expected utility runs.
	// The profiled plan is a candidate too, judged on the same data-aware
	// estimate, and kept unless another is better by Margin: recalls a
	// few points apart are within what their profile can tell apart, and
	// a choice between estimates that close follows their noise.
	best := (Grouped{Threshold: g.Threshold}).Schedule(p)
	bestU := ExpectedUtility(p, best, true) + Margin
	for _, c := range [][]Batch{s, g.schedule(p, g.groups(p, true))} {
		if u := ExpectedUtility(p, c, true); u > bestU {
			best, bestU = c, u
		}
	}
	return best
}

// Margin is the mean expected utility per request by which a data-aware
// schedule must beat the profiled one to replace it.
const Margin = 0.005

func (g Grouped) schedule(p *Problem, gs []*group) []Batch {
	if len(gs) <= g.Threshold {
		return g.exact(p, gs)
	}
	sort.SliceStable(gs, func(a, b int) bool { return gs[a].prio > gs[b].prio })
	var s []Batch
	t := p.Now
	for _, gr := range gs {
		best, bestU, bestEnd := -1, math.Inf(-1), 0.0
		for m, mod := range p.Apps[gr.app].Models {
			if !g.usable(mod) {
				continue
			}
			if u, end := g.utility(p, gr, m, t); u > bestU {
				best, bestU, bestEnd = m, u, end
			}
		}
		s = append(s, Batch{App: gr.app, Model: best, Requests: gr.reqs})
		t = bestEnd
	}
	return s
}

// exact tries every order of the groups and every model per group (a
// depth-first search that keeps the best total utility).
func (g Grouped) exact(p *Problem, gs []*group) []Batch {
	n := len(gs)
	used := make([]bool, n)
	cur := make([]Batch, 0, n)
	var best []Batch
	bestU := math.Inf(-1)
	var dfs func(t, u float64)
	dfs = func(t, u float64) {
		if len(cur) == n {
			if u > bestU {
				bestU = u
				best = append(best[:0], cur...)
			}
			return
		}
		for k, gr := range gs {
			if used[k] {
				continue
			}
			used[k] = true
			for m, mod := range p.Apps[gr.app].Models {
				if !g.usable(mod) {
					continue
				}
				gu, end := g.utility(p, gr, m, t)
				cur = append(cur, Batch{App: gr.app, Model: m, Requests: gr.reqs})
				dfs(end, u+gu)
				cur = cur[:len(cur)-1]
			}
			used[k] = false
		}
	}
	dfs(p.Now, 0)
	return best
}
