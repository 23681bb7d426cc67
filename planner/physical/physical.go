// Package physical owns the physical plan: every operator with its chosen model
// variant, its workers (tier, location, share of the traffic) and the estimated
// throughput, accuracy, compute and network cost, plus the totals. Plans are
// immutable values built once from an optimizer result and the lowering that
// produced its problem. It imports the planner's lower and optimize packages;
// never operators or dataflow (which deploy it).
package physical

import (
	"fmt"
	"slices"

	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/lower"
	"github.com/tierflow/tierflow/planner/optimize"
)

// Plan is a physical plan (or the explanation of why none meets the targets).
type Plan struct {
	Strategy    string
	Feasible    bool
	ComputeCost float64
	NetworkCost float64
	TotalCost   float64
	Accuracy    float64
	Throughput  float64
	OptimizerMs float64
	// Optimal: the strategy proved no cheaper plan exists; GaveUp: an exact
	// search ran out of time (Note says after how long).
	Optimal bool
	GaveUp  bool
	Note    string
	// Reason says, for an infeasible plan, which target cannot be met and the
	// best reachable.
	Reason string
	// Reachable carries the reason's numbers (optimize.Reachable); nil for
	// a feasible plan.
	Reachable *optimize.Reachable
	// Sink is the operator whose output is the query's result.
	Sink string
	// Operators in topological order (inputs first).
	Operators []Operator
	Sources   []Source
	Targets   Targets
	Links     []optimize.LinkLoad
	// Problem is what the optimizer solved (for tools and tests).
	Problem *optimize.Problem
	// Estimates are the models planned at an estimated latency (no
	// profile for this infrastructure), in plan order.
	Estimates []Estimate
}

// Estimate is a model planned at an estimated latency.
type Estimate struct {
	Model string
	// On are the worker types estimated; Profiled those its profiles
	// name (none: never profiled).
	On, Profiled []string
}

// Text says what was estimated and what measures it.
func (e Estimate) Text() string {
	from := "it has no latency profile"
	if len(e.Profiled) > 0 {
		from = fmt.Sprintf("its profiles name %v, none of them here", e.Profiled)
	}
	return fmt.Sprintf("the latency of model %s is an estimate (%s; tierflow profile measures one)", e.Model, from)
}

// Targets are the objectives the plan was made for.
type Targets struct {
	Accuracy   *float64
	Throughput float64
	// Budget is the highest cost per hour (BUDGET <= x PER HOUR); 0: none.
	Budget float64
	// Reserved is the capacity running queries held when the plan was made.
	Reserved []optimize.Reservation
	// Priority (REALTIME, BEST_EFFORT, "") and LatencyMs are the query's
	// scheduling class and latency bound, which the workers' inference
	// schedulers act on.
	Priority  string
	LatencyMs float64
}

// Operator is one placed operator.
type Operator struct {
	Name string
	// Kind: "ml" or "relational".
	Kind    string
	Model   string
	Variant string
	Workers []Worker
	// Demand is items per second into the operator.
	Demand      float64
	Accuracy    float64
	ComputeCost float64
	NetworkCost float64
	// Inputs are upstream operators or sources.
	Inputs []string
	// Fused describes the relational operators that run with it.
	Fused []string
	// Batch is an ML operator's dynamic batching (nil for others).
	Batch *Batching
	// Classes is the chosen variant's per-class recall as profiled (nil
	// when the catalog has none): what a data-aware accuracy weighs.
	Classes []catalog.ClassRecall
	// ClassFreq is the class mix Accuracy was computed for, when the plan
	// is data-aware (nil: the profiled accuracy).
	ClassFreq map[string]float64
	// Estimated are the worker types the chosen variant's latency is
	// estimated on (lower.EstimatedLatencyMs): the model has no latency
	// profile for this infrastructure yet. nil: profiled.
	Estimated []string
}

// Worker is one worker's part of an operator.
type Worker struct {
	Name     string
	Type     string
	Tier     string
	Location string
	// Share of the operator's items, and the items per second that is.
	Share       float64
	ItemsPerSec float64
	Capacity    float64
	// Free is the share of Capacity running queries left to this plan, when
	// below 1 (0: all of it).
	Free float64
}

// Source is a stream feeding the plan.
type Source struct {
	Name   string
	Tier   string
	Rate   float64
	Fused  []string
	Stream string
	// Bounded: a table (or a SELECT without FROM) read once, not a stream.
	Bounded bool
}

// New builds the physical plan of an optimizer result.
func New(res *lower.Result, p *optimize.Plan) *Plan {
	out := &Plan{
		Strategy: p.Strategy, Feasible: p.Feasible,
		ComputeCost: p.ComputeCost, NetworkCost: p.NetworkCost, TotalCost: p.TotalCost,
		Accuracy: p.Accuracy, Throughput: p.Throughput, OptimizerMs: p.OptimizerMs,
		Optimal: p.Optimal, GaveUp: p.GaveUp, Note: p.Note, Reason: p.Reason, Reachable: p.Reachable,
		Sink: res.Sink, Links: append([]optimize.LinkLoad(nil), p.Links...), Problem: res.Problem,
		Targets: Targets{Accuracy: res.Problem.Objectives.MinAccuracy, Throughput: res.Problem.Objectives.Throughput,
			Budget: res.Problem.Objectives.Budget, Reserved: res.Problem.Reserved},
	}
	types := map[string]string{}
	for _, w := range res.Problem.Workers {
		types[w.Name] = w.Type
	}
	rates, tiers := map[string]float64{}, map[string]string{}
	for _, s := range res.Problem.Sources {
		rates[s.Name] = s.Rate
		tiers[s.Name] = s.Tier
	}
	byName := map[string]optimize.OperatorPlan{}
	for _, op := range p.Operators {
		byName[op.Name] = op
	}
	for _, st := range res.Stages {
		if st.Kind == "source" {
			src := Source{Name: st.Name, Rate: rates[st.Name], Tier: tiers[st.Name], Fused: describe(st.Fused), Bounded: st.Bounded}
			if sc, ok := st.Node.(*logical.Scan); ok {
				src.Stream = sc.Name()
			}
			out.Sources = append(out.Sources, src)
			continue
		}
		if st.Model != nil && len(st.Estimated) > 0 && !slices.ContainsFunc(out.Estimates, func(e Estimate) bool { return e.Model == st.Model.Name }) {
			// Once per model, however many calls of it the query makes.
			e := Estimate{Model: st.Model.Name, Profiled: lower.Profiled(st.Model)}
			for _, types := range st.Estimated {
				e.On = types // the same types for every variant
			}
			out.Estimates = append(out.Estimates, e)
		}
		op := Operator{Name: st.Name, Kind: st.Kind, Inputs: append([]string(nil), st.Inputs...), Fused: describe(st.Fused)}
		if st.Model != nil {
			op.Model = st.Model.Name
		}
		if pl, ok := byName[st.Name]; ok {
			op.Variant, op.Demand, op.Accuracy = pl.Variant, pl.Demand, pl.Accuracy
			op.ComputeCost, op.NetworkCost = pl.ComputeCost, pl.NetworkCost
			busiest := 0.0
			for _, w := range pl.Workers {
				op.Workers = append(op.Workers, Worker{Name: w.Name, Type: types[w.Name], Tier: w.Tier, Location: w.Location,
					Share: w.Share, ItemsPerSec: w.ItemsPerSec, Capacity: w.Capacity, Free: w.Free})
				busiest = max(busiest, w.ItemsPerSec)
			}
			if st.Model != nil {
				if v := st.Model.Variant(pl.Variant); v != nil {
					op.Classes = v.Classes
				}
				op.ClassFreq = st.ClassFreq
				op.Estimated = st.Estimated[pl.Variant]
				call, _ := st.Node.(*logical.LateralModel)
				op.Batch = batching(nodeModel{model: st.Model, call: call}, busiest)
				if lat := res.Problem.Objectives.LatencyMs; lat > 0 {
					latencyBatching(op.Batch, res.Problem, out.Sources, st, &op, lat, busiest)
				}
			}
		}
		out.Operators = append(out.Operators, op)
	}
	return out
}

func describe(ns []logical.Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Describe())
	}
	return out
}

// Operator returns the operator called name, or nil.
func (p *Plan) Operator(name string) *Operator {
	for i := range p.Operators {
		if p.Operators[i].Name == name {
			return &p.Operators[i]
		}
	}
	return nil
}

// Source returns the source called name, or nil.
func (p *Plan) Source(name string) *Source {
	for i := range p.Sources {
		if p.Sources[i].Name == name {
			return &p.Sources[i]
		}
	}
	return nil
}

// Frontier is the accuracy/cost Pareto frontier of a query: the cheapest
// plan of every accuracy that no more accurate plan matches on cost, most
// accurate first (costs strictly falling).
type Frontier struct {
	Points  []*Plan
	Targets Targets
	// OptimizerMs is the time the whole walk took.
	OptimizerMs float64
}

// NewFrontier builds the frontier's physical plans.
func NewFrontier(res *lower.Result, pts []*optimize.Plan) *Frontier {
	f := &Frontier{Targets: Targets{Accuracy: res.Problem.Objectives.MinAccuracy, Throughput: res.Problem.Objectives.Throughput,
		Budget: res.Problem.Objectives.Budget, Reserved: res.Problem.Reserved}}
	for _, p := range pts {
		f.Points = append(f.Points, New(res, p))
		f.OptimizerMs = max(f.OptimizerMs, p.OptimizerMs)
	}
	return f
}

// Variants are the plan's model variants, by operator name and by model
// name: what the executors must run (operators/exec, runtime/inference).
func (p *Plan) Variants() map[string]string {
	out := map[string]string{}
	for _, op := range p.Operators {
		if op.Variant == "" {
			continue
		}
		out[op.Name] = op.Variant
		if op.Model != "" {
			out[op.Model] = op.Variant
		}
	}
	return out
}

// Spread has operator name run on workers, each an equal share of its
// items, where the runtime runs it on more workers than the plan gave it
// (a join of two streams split over its inputs' instances): what EXPLAIN
// then shows is where it runs. A worker the plan had keeps its capacity
// and free share; a new one takes the capacity of a worker of its type in
// the plan. It reports whether it changed the plan.
func (p *Plan) Spread(name string, workers []Worker) bool {
	op := p.Operator(name)
	if op == nil || len(workers) <= len(op.Workers) {
		return false
	}
	capacity := func(w Worker) (float64, float64) {
		for _, o := range p.Operators {
			for _, had := range o.Workers {
				if had.Name == w.Name && o.Name == name {
					return had.Capacity, had.Free
				}
			}
		}
		for _, had := range op.Workers {
			if had.Type == w.Type {
				return had.Capacity, 0
			}
		}
		return 0, 0
	}
	out := make([]Worker, len(workers))
	share := 1 / float64(len(workers))
	for i, w := range workers {
		w.Share, w.ItemsPerSec = share, op.Demand*share
		w.Capacity, w.Free = capacity(w)
		out[i] = w
	}
	op.Workers = out
	return true
}

// RenameWorkers puts every part the plan gives worker a on worker to[a]
// (a worker to does not name stays). The caller keeps the plan's cost:
// it swaps only workers the cost model cannot tell apart.
func (p *Plan) RenameWorkers(to map[string]string) {
	for i := range p.Operators {
		for k := range p.Operators[i].Workers {
			if n, ok := to[p.Operators[i].Workers[k].Name]; ok {
				p.Operators[i].Workers[k].Name = n
			}
		}
	}
}
