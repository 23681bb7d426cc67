// Package planner is the front door of query planning: it takes a parsed
// statement, the catalog and the infrastructure, and returns the bound logical
// plan, the optimizer problem and the physical plan (bind -> rewrite -> lower
// -> optimize). Its subpackages own the stages: catalog, infra, bind, logical,
// rewrite, lower, physical and explain (optimize, jellybean and expr belong to
// their own owners). It imports lang and its subpackages; never dataflow,
// operators, relay or runtime.
package planner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/lower"
	"github.com/tierflow/tierflow/planner/optimize"
	"github.com/tierflow/tierflow/planner/physical"
	"github.com/tierflow/tierflow/planner/rewrite"
)

// Error kinds of planning.
var (
	// ErrNoInfra: planning needs an infrastructure.
	ErrNoInfra = errors.New("no infrastructure")
	// ErrInfeasible: no plan meets the query's objectives. EXPLAIN shows such
	// a plan with its reason; running it is refused (Result.Runnable).
	ErrInfeasible = errors.New("no plan meets the objectives")
)

// DefaultStrategy is the strategy used when none is named.
const DefaultStrategy = "auto"

// Options choose the strategy and profile and override the query's objectives.
type Options struct {
	Strategy string
	// Percentile of latency profiles (50, 75, 90); 0 means 75.
	Percentile int
	Accuracy   *float64
	Throughput float64
	// Optimize tunes the strategies (beam widths, seed, time budget).
	Optimize optimize.Options
	// Registry of strategies; nil means optimize.DefaultRegistry().
	Registry *optimize.Registry
	// Frontier asks for the accuracy/cost Pareto frontier too
	// (EXPLAIN (FRONTIER)): Result.Frontier.
	Frontier bool
	// Reserved is the capacity running queries hold on the workers (the
	// coordinator's live view); the plan uses only what is left.
	Reserved []optimize.Reservation
	// InputRatio replaces estimated selectivities with measured ones
	// (lower.Options.InputRatio).
	InputRatio map[string]float64
	// ClassMix is the live estimate of the class mix reaching each model
	// (by model name): a DATA AWARE query weighs its variants' per-class
	// recall by it (runtime/dataaware estimates it).
	ClassMix map[string]map[string]float64
	// AdaptInputs is SET planner.adapt_inputs (rewrite.AdaptInputs' mode:
	// "" or resize, uint8, off): how a model call's images cross a link
	// when its variant takes a smaller size than the stream's.
	AdaptInputs string
}

// Result is every stage of planning one query.
type Result struct {
	Bound     *logical.Plan
	Rewritten *logical.Plan
	Lowered   *lower.Result
	Physical  *physical.Plan
	// Frontier is set when Options.Frontier asked for it.
	Frontier *physical.Frontier
}

// PlanStatement binds, rewrites, lowers and optimizes one SELECT, INSERT or
// EXPLAIN statement.
func PlanStatement(ctx context.Context, stmt lang.Statement, cat *catalog.Catalog, inf *infra.Infra, o Options) (*Result, error) {
	bound, err := bind.New(cat).Bind(stmt)
	if err != nil {
		return nil, err
	}
	return PlanLogical(ctx, bound, cat, inf, o)
}

// PlanLogical plans an already bound query.
func PlanLogical(ctx context.Context, bound *logical.Plan, cat *catalog.Catalog, inf *infra.Infra, o Options) (*Result, error) {
	if inf == nil {
		return nil, fmt.Errorf("%w: pass --infra FILE (for example examples/vqa/infra.yaml)", ErrNoInfra)
	}
	res := &Result{Bound: bound, Rewritten: rewrite.ApplyWith(bound, rewrite.Options{Stats: cat.StatsOf})}
	lo, err := lower.Lower(res.Rewritten, cat, inf, lower.Options{Percentile: o.Percentile, Accuracy: o.Accuracy, Throughput: o.Throughput, InputRatio: o.InputRatio, ClassMix: o.ClassMix, AdaptInputs: o.AdaptInputs})
	if err != nil {
		return nil, err
	}
	res.Lowered = lo
	reg := o.Registry
	if reg == nil {
		reg = optimize.DefaultRegistry()
	}
	strategy := o.Strategy
	if strategy == "" {
		strategy = DefaultStrategy
	}
	if len(lo.Problem.Operators) == 0 {
		return nil, fmt.Errorf("%w: the query applies no model and no operator needs a worker: nothing to place", lower.ErrLower)
	}
	lo.Problem.Reserved = o.Reserved
	p, err := reg.Optimize(ctx, strings.ToLower(strategy), lo.Problem, o.Optimize)
	if err != nil {
		return nil, err
	}
	res.Physical = physical.New(lo, p)
	res.Physical.Targets.Priority, res.Physical.Targets.LatencyMs = bound.Objectives.Priority, bound.Objectives.LatencyMs
	adaptedSources(res, o.AdaptInputs)
	if o.Frontier {
		pts, err := optimize.Frontier(ctx, lo.Problem, o.Optimize)
		if err != nil {
			return nil, err
		}
		res.Frontier = physical.NewFrontier(lo, pts)
	}
	return res, nil
}

// Runnable says whether the chosen plan may run: an error wrapping
// ErrInfeasible, at the query's WITH (...), naming the objective no plan
// meets and the best reachable, when the optimizer found none that meets
// them. Running the most accurate variants instead would silently ignore
// what the query asked for.
func (r *Result) Runnable() error {
	if r.Physical == nil || r.Physical.Feasible {
		return nil
	}
	reason := r.Physical.Reason
	if reason == "" {
		reason = "the optimizer found no plan"
	}
	for _, e := range r.Physical.Estimates {
		// The estimate may be what stands in the way: say so.
		reason += "; " + e.Text()
	}
	// The throughput search ran only when the accuracy target is reachable:
	// then it is the throughput that cannot be met.
	obj := r.Bound.Objectives
	p := obj.AccuracyPos
	if rc := r.Physical.Reachable; rc != nil && rc.MaxThroughput != nil {
		p = obj.ThroughputPos
	}
	if rc := r.Physical.Reachable; rc != nil && rc.MinCost != nil {
		// Every other target is met, by a plan dearer than the budget.
		p = obj.BudgetPos
	}
	if p.Line == 0 {
		p = obj.Pos
	}
	if p.Line == 0 {
		return fmt.Errorf("%w: %s", ErrInfeasible, reason)
	}
	// Positioned as a binding problem is, so every front end prints it
	// with its line and a caret; its kind stays ErrInfeasible (exit 1: the
	// query is well formed, the infrastructure cannot serve it).
	return &bind.Error{Pos: p, Msg: fmt.Sprintf("%v: %s", ErrInfeasible, reason), Kind: ErrInfeasible}
}

// ParsePercentile reads "p50", "p75", "p90" (or 50, 75, 90).
func ParsePercentile(s string) (int, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "p75", "75":
		return 75, nil
	case "p50", "50":
		return 50, nil
	case "p90", "90":
		return 90, nil
	}
	return 0, fmt.Errorf("unknown profile %q: want p50, p75 or p90", s)
}

// adaptedSources notes on the physical plan where the chosen variants have
// the images resized before a link (rewrite.AdaptInputs, which the runtime
// applies as it builds the plan): with the stage that produces the model
// call's input, the source's when nothing runs between them.
func adaptedSources(res *Result, mode string) {
	root := rewrite.AdaptInputsLatency(res.Rewritten.Root, res.Physical.Variants(), mode, res.Rewritten.Objectives)
	if root == res.Rewritten.Root {
		return
	}
	stageOf := map[logical.Node]*lower.Stage{}
	for _, s := range res.Lowered.Stages {
		if s.Node != nil {
			stageOf[s.Node] = s
		}
		for _, f := range s.Fused {
			stageOf[f] = s
		}
	}
	logical.Walk(root, func(n logical.Node) bool {
		a, ok := n.(*logical.Adapt)
		if !ok {
			return true
		}
		// Subtrees below an adaptation are the rewritten plan's nodes.
		st := stageOf[a.Input]
		if st == nil {
			return true
		}
		line := a.Describe() + " (before the link)"
		if src := res.Physical.Source(st.Name); src != nil {
			src.Fused = append(src.Fused, line)
		} else if op := res.Physical.Operator(st.Name); op != nil {
			op.Fused = append(op.Fused, line)
		}
		return true
	})
}
