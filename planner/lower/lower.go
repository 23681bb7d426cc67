// Package lower turns a bound logical plan, the catalog and the infrastructure
// into the optimizer's Problem. Relational operators are fused with the ML
// operator or source they follow (they run on the same workers), scaling the
// rates on the edges by their selectivity; a join of two branches feeding one
// model becomes that model's operator with two inputs, as in the JellyBean
// reference DAG. Bytes per item on every edge come from the columns that cross
// it. It imports the planner's catalog, infra, logical and optimize packages;
// never operators or dataflow.
package lower

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/optimize"
)

// ErrLower is the kind of every error about a plan that cannot be lowered.
var ErrLower = errors.New("cannot plan")

// Options select the profile percentile and override the query's objectives.
type Options struct {
	// Percentile of latency profiles: 50, 75 (default) or 90.
	Percentile int
	// Accuracy and Throughput, when set, replace the query's objectives.
	Accuracy   *float64
	Throughput float64
	// InputRatio, by stage name (a model call), is the measured items into
	// the stage per item entering the workflow: it replaces the ratio the
	// estimated selectivities of the filters and joins before the stage
	// give (the runtime's re-plan with live numbers), and scales what
	// follows the stage with it.
	InputRatio map[string]float64
	// ClassMix is the estimated class mix of the data reaching each model
	// (by model name): for a DATA AWARE query a variant's accuracy is then
	// its per-class recall weighed by the mix (SneakPeek eq. 9).
	ClassMix map[string]map[string]float64
	// AdaptInputs is SET planner.adapt_inputs (rewrite.AdaptInputs' mode):
	// an edge into a model call whose variant has its images resized before
	// the link carries the resized bytes for that variant, so the network
	// cost and the LATENCY budget count what crosses the link.
	AdaptInputs string
}

// RelationalLatencyMs is the per-item latency assumed for a relational
// operator that has to run on its own workers (a join or union with no model
// above it): cheap next to any model.
const RelationalLatencyMs = 0.05

// Stage is one operator of the Problem (or a source) with the logical nodes
// fused into it, for EXPLAIN.
type Stage struct {
	Name string
	// Kind: "source", "ml" or "relational".
	Kind string
	// Model is set for ML stages.
	Model *catalog.Model
	// ClassFreq is the class mix its variants' accuracy was weighed by
	// (data-aware planning); nil: profiled accuracy.
	ClassFreq map[string]float64
	// Estimated, by variant, are the worker types whose latency is an
	// estimate (estimate): the model has no profile for this
	// infrastructure. nil: profiled.
	Estimated map[string][]string
	// Bounded marks a source that is a table or the row of a SELECT
	// without FROM, read once (boundedSource).
	Bounded bool
	// Node is the scan, model or standalone relational node.
	Node logical.Node
	// Fused are the relational nodes running with it, bottom-up.
	Fused []logical.Node
	// Inputs are the upstream stages' names.
	Inputs []string
	// demand is the estimated items per second into the stage at the
	// sources' declared rates (the prototype's T_v); units is the same in
	// items entering the workflow (model fan-out and filters left out).
	demand, units float64
}

// outRate is the estimated items per second the stage emits.
func (s *Stage) outRate() float64 {
	if s.Model != nil {
		return s.demand * s.Model.Ratio()
	}
	return s.demand
}

// Result is a lowered plan.
type Result struct {
	Problem *optimize.Problem
	// Stages by name, and in topological order (sources first).
	Stages []*Stage
	// Sink is the name of the stage whose output is the query's result.
	Sink string
}

// Stage returns the stage called name, or nil.
func (r *Result) Stage(name string) *Stage {
	for _, s := range r.Stages {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// colSize is where a column's bytes come from: a fixed estimate, or a share of
// a model's measured output size (which depends on the variant).
type colSize struct {
	kb    float64
	model *logical.LateralModel
	out   int // which of model's outputs
	share float64
	// payload: bulk data (tensor, blob, string), as opposed to an id.
	payload bool
}

// pending is what flows up the tree while lowering: the stages feeding the
// current node, with the ratio (items here per item into that stage) of each.
type pending struct {
	stage *Stage
	ratio float64
	// carry are relational nodes that combine several branches: they run
	// with the operator that consumes them.
	carry []logical.Node
	// unit scales the branch's rate in source items (unions only), to state
	// the throughput objective in items entering the workflow.
	unit float64
	// share and unitShare are the parts of the stated rate (outRate ×
	// ratio) and units that are this branch's own (0 means all): a union
	// states its total on every branch, so a union above it sums what each
	// branch brings, not the totals again, which doubled the estimate per
	// level of nesting (a WITH that doubles itself 40 times asked for 2^79
	// items/s).
	share, unitShare float64
}

type lowerer struct {
	cat    *catalog.Catalog
	inf    *infra.Infra
	opt    Options
	p      *optimize.Problem
	stages []*Stage
	names  map[string]int
	sizes  map[logical.Node][]colSize
	// parents indexes the plan lowered (child to parents) and above
	// memoises a node's ancestors, so that whether a stage lies under a
	// node is a lookup, not a walk down the node's whole subtree per
	// branch (a union of 10,000 branches made 10^8 visits); built on
	// first use.
	parents map[logical.Node][]logical.Node
	above   map[logical.Node]map[logical.Node]bool
	errs    []error
	// root is the plan lowered, which rewrite.AdaptInputs rewrites.
	root logical.Node
	// dataAware: the query's ACCURACY is DATA AWARE (ClassMix applies).
	dataAware bool
	// bounded: the query reads no stream, only tables or constants
	// (boundedSource).
	bounded  bool
	machines []infra.Machine
}

// Lower builds the optimizer problem of a plan.
func Lower(plan *logical.Plan, cat *catalog.Catalog, inf *infra.Infra, opt Options) (*Result, error) {
	if opt.Percentile == 0 {
		opt.Percentile = 75
	}
	if opt.Percentile != 50 && opt.Percentile != 75 && opt.Percentile != 90 {
		return nil, fmt.Errorf("%w: profile percentile %d: want 50, 75 or 90", ErrLower, opt.Percentile)
	}
	l := &lowerer{cat: cat, inf: inf, opt: opt, names: map[string]int{}, sizes: map[logical.Node][]colSize{}, root: plan.Root, dataAware: plan.Objectives.DataAware}
	l.p = &optimize.Problem{CommCostScaling: 1}
	for _, t := range inf.Tiers {
		l.p.Tiers = append(l.p.Tiers, optimize.Tier{Name: t.Name, Locations: max(t.Locations, 1)})
	}
	l.machines = inf.Machines()
	for _, m := range l.machines {
		l.p.Workers = append(l.p.Workers, optimize.Worker{Name: m.Name, Tier: m.Tier, Location: m.Location, Type: m.Type.Name, Price: m.Type.Price, GPU: m.Type.GPU})
	}
	l.links()

	l.bounded = !readsStream(plan.Root)
	top := l.walk(plan.Root)
	var sink *Stage
	switch {
	case len(top) == 1 && top[0].stage.Kind != "source":
		sink = top[0].stage
	case len(top) >= 1:
		// The result is a source's rows (no model), or a join of several
		// branches with no model above: a relational operator has to run.
		sink = l.relational(plan.Root, top)
	}
	if sink != nil {
		l.p.Objectives.Sink = sink.Name
	}
	obj := plan.Objectives
	if opt.Accuracy != nil {
		obj.Accuracy = opt.Accuracy
	}
	if opt.Throughput > 0 {
		obj.Throughput = opt.Throughput
	}
	if obj.Accuracy != nil {
		a := *obj.Accuracy
		if a <= 1 && l.percentCatalog() {
			// ACCURACY >= 0.56 against a catalog in percent means 56.
			a *= 100
		}
		l.p.Objectives.MinAccuracy = optimize.Float(a)
	}
	if obj.Throughput > 0 && sink != nil && sink.units > 0 {
		// THROUGHPUT counts items entering the workflow (frames, requests);
		// the optimizer's target is the sink's demand, which model fan-out
		// (detections per frame) and filters scale.
		l.p.Objectives.Throughput = obj.Throughput * sink.demand / sink.units
	} else {
		l.p.Objectives.Throughput = obj.Throughput
	}
	// BUDGET turns the objective around: the most accurate plan within it.
	l.p.Objectives.Budget = obj.Budget
	l.p.Objectives.LatencyMs = obj.LatencyMs
	l.endToEnd(sink)
	if len(l.errs) > 0 {
		return nil, errors.Join(l.errs...)
	}
	res := &Result{Problem: l.p, Stages: l.stages}
	if sink != nil {
		res.Sink = sink.Name
	}
	return res, nil
}

// selectivity estimates what a filter keeps, with the class frequencies the
// catalog measured for model outputs (a filter on a classifier's label keeps
// that label's share of the rows, not the textbook 0.1).
func (l *lowerer) selectivity(f *logical.Filter) float64 {
	sizes := l.colSizes(f.Input)
	return logical.SelectivityWith(f.Pred, func(c *expr.Column, v any) (float64, bool) {
		if c.Index >= len(sizes) || sizes[c.Index].model == nil || sizes[c.Index].model.Model == nil {
			return 0, false
		}
		outs := sizes[c.Index].model.Model.Outputs
		s, ok := v.(string)
		if o := sizes[c.Index].out; !ok || o >= len(outs) || outs[o].Values == nil {
			return 0, false
		}
		frac, ok := outs[sizes[c.Index].out].Values[s]
		return frac, ok
	})
}

func (l *lowerer) errorf(n logical.Node, format string, args ...any) {
	l.errs = append(l.errs, fmt.Errorf("%s: %w: "+format, append([]any{n.Position(), ErrLower}, args...)...))
}

// percentCatalog reports whether the catalog's accuracies are in percent.
func (l *lowerer) percentCatalog() bool {
	for _, m := range l.cat.Models {
		for _, v := range m.Variants {
			if math.Abs(v.Accuracy) > 1 {
				return true
			}
			for _, r := range v.Profile {
				if math.Abs(r.Output) > 1 {
					return true
				}
			}
		}
	}
	return false
}

func (l *lowerer) unique(name string) string {
	l.names[name]++
	if n := l.names[name]; n > 1 {
		return fmt.Sprintf("%s#%d", name, n)
	}
	return name
}

func (l *lowerer) links() {
	isTier := func(s string) bool { return l.inf.Tier(s) != nil }
	workers := map[string]bool{}
	for _, w := range l.p.Workers {
		workers[w.Name] = true
	}
	for _, ln := range l.inf.TierLinks() {
		l.p.TierLinks = append(l.p.TierLinks, optimize.TierLink{
			From: ln.From, To: ln.To, Multiplier: ln.CostPerGB,
			// Megabits per second to the optimizer's MB (MiB) per second.
			BandwidthMBps: ln.BandwidthMbps * 1e6 / 8 / (1024 * 1024),
		})
	}
	for _, ln := range l.inf.Links {
		switch {
		case isTier(ln.From) && isTier(ln.To):
			// Among TierLinks above.
		case workers[ln.From] && workers[ln.To]:
			l.p.WorkerLinks = append(l.p.WorkerLinks, optimize.WorkerLink{From: ln.From, To: ln.To, Multiplier: ln.CostPerGB})
		case workers[ln.To]:
			l.p.SourceLinks = append(l.p.SourceLinks, optimize.SourceLink{Source: ln.From, Worker: ln.To, Multiplier: ln.CostPerGB})
		}
	}
}

// walk lowers n and returns the stages whose output n's rows come from.
func (l *lowerer) walk(n logical.Node) []pending {
	switch x := n.(type) {
	case *logical.Scan:
		if x.Table != nil {
			if l.bounded {
				return []pending{{stage: l.boundedSource(x), ratio: 1}}
			}
			// A bounded table is shipped to whoever joins it: no stage.
			return nil
		}
		return []pending{{stage: l.source(x), ratio: 1}}
	case *logical.Values:
		return []pending{{stage: l.boundedSource(x), ratio: 1}}
	case *logical.LateralModel:
		in := l.walk(x.Input)
		return []pending{{stage: l.model(x, in), ratio: 1}}
	case *logical.Filter:
		in := l.walk(x.Input)
		return l.fuse(in, n, l.selectivity(x))
	case *logical.Aggregate:
		in := l.walk(x.Input)
		return l.fuse(in, n, aggregateRatio(x, in))
	case *logical.Join:
		left, right := l.walk(x.Left), l.walk(x.Right)
		sel := 1.0
		if x.On != nil && x.Kind != logical.LeftJoin {
			// Streams joined on a request key meet one to one; a theta join
			// keeps what its predicate keeps.
			if !isEquiJoin(x.On) {
				sel = logical.Selectivity(x.On)
			}
		}
		if len(left) == 0 || len(right) == 0 {
			// A join with a table runs where the stream side runs.
			return l.fuse(append(left, right...), n, sel)
		}
		all := append(append([]pending(nil), left...), right...)
		for i := range all {
			all[i].ratio *= sel
		}
		return l.fuse(all, n, 1)
	case *logical.Union:
		var all []pending
		for _, c := range x.Inputs {
			all = append(all, l.walk(c)...)
		}
		// A union feeding one operator: the prototype's demand is the
		// minimum over the inputs, a union's is the sum, so each branch's
		// ratio is scaled to make every input state the total.
		total, totalUnits := 0.0, 0.0
		for _, p := range all {
			total += p.ownRate()
			totalUnits += p.ownUnits()
		}
		for i, p := range all {
			if len(all) == 1 {
				break
			}
			if r := p.stage.outRate() * p.ratio; r > 0 && total > 0 {
				all[i].share = p.ownRate() / total
				all[i].ratio *= total / r
			}
			if u := p.stage.units * p.unitScale(); u > 0 && totalUnits > 0 {
				all[i].unitShare = p.ownUnits() / totalUnits
				all[i].unit = p.unitScale() * totalUnits / u
			}
		}
		return l.fuse(all, n, 1)
	default: // Project, Sort, Limit, Sink
		var in []pending
		for _, c := range n.Children() {
			in = append(in, l.walk(c)...)
		}
		return l.fuse(in, n, 1)
	}
}

// ownRate and ownUnits are the branch's own rate and units: what it states
// less what unions below stated for their other branches.
func (p pending) ownRate() float64 { return p.stage.outRate() * p.ratio * orOne(p.share) }

func (p pending) ownUnits() float64 {
	return p.stage.units * p.unitScale() * orOne(p.unitShare)
}

func orOne(f float64) float64 {
	if f == 0 {
		return 1
	}
	return f
}

func (p pending) unitScale() float64 {
	if p.unit == 0 {
		return 1
	}
	return p.unit
}

// fuse runs n with the stage(s) below it, scaling their rates.
func (l *lowerer) fuse(in []pending, n logical.Node, ratio float64) []pending {
	out := append([]pending(nil), in...)
	for i := range out {
		out[i].ratio *= ratio
	}
	l.attach(out, n)
	return out
}

func (l *lowerer) attach(in []pending, n logical.Node) {
	if len(in) == 0 {
		return
	}
	if len(in) == 1 && len(in[0].carry) == 0 {
		in[0].stage.Fused = append(in[0].stage.Fused, n)
		return
	}
	// Over several branches the node runs where they meet: with the
	// operator that consumes them.
	for i := range in {
		in[i].carry = append(in[i].carry, n)
	}
}

// carried returns the nodes the branches carry, once each, in order.
func carried(in []pending) []logical.Node {
	var out []logical.Node
	seen := map[logical.Node]bool{}
	for _, p := range in {
		for _, n := range p.carry {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

func aggregateRatio(a *logical.Aggregate, in []pending) float64 {
	if a.Window == nil {
		// A running aggregate emits an update per input row.
		return 1
	}
	rate := 0.0
	for _, p := range in {
		rate += p.ratio * p.stage.rate()
	}
	if rate <= 0 {
		return 1
	}
	groups := 1.0
	if len(a.Group) > 0 {
		// Without statistics, assume ten groups per window.
		groups = 10
	}
	sec := a.Window.Size.Seconds()
	if a.Window.Kind == logical.Hop && a.Window.Slide > 0 {
		sec = a.Window.Slide.Seconds()
	}
	if sec <= 0 {
		return 1
	}
	return math.Min(1, groups/sec/rate)
}

func isEquiJoin(e expr.Expr) bool {
	switch x := e.(type) {
	case *expr.Call:
		return x.Func == "equal"
	case *expr.Logic:
		if x.Op != expr.OpAnd {
			return false
		}
		for _, a := range x.Args {
			if isEquiJoin(a) {
				return true
			}
		}
	}
	return false
}

func (s *Stage) rate() float64 { return s.outRate() }

func (l *lowerer) source(x *logical.Scan) *Stage {
	s := &Stage{Name: l.unique(x.Stream.Name), Kind: "source", Node: x}
	tier := x.Stream.Tier
	if tier == "" {
		tier = l.inf.DefaultSourceTier()
	}
	if l.inf.Tier(tier) == nil {
		var have []string
		for _, t := range l.inf.Tiers {
			have = append(have, t.Name)
		}
		if x.Stream.Pos.Line > 0 {
			// Blame the catalog entry that names the tier.
			l.errs = append(l.errs, fmt.Errorf("%s: %w: stream %s sits in tier %q, which the infrastructure does not have (tiers %v)", x.Stream.Pos, ErrLower, x.Stream.Name, tier, have))
		} else {
			l.errorf(x, "stream %s sits in tier %q, which the infrastructure does not have (tiers %v)", x.Stream.Name, tier, have)
		}
	}
	rate := x.Stream.Rate
	if rate <= 0 {
		rate = 1
	}
	s.demand, s.units = rate, rate
	l.p.Sources = append(l.p.Sources, optimize.Source{Name: s.Name, Rate: rate, Tier: tier})
	l.stages = append(l.stages, s)
	return s
}

// readsStream says whether the plan scans a stream.
func readsStream(n logical.Node) bool {
	found := false
	logical.Walk(n, func(n logical.Node) bool {
		if s, ok := n.(*logical.Scan); ok && s.Stream != nil {
			found = true
		}
		return !found
	})
	return found
}

// boundedSource is where a query that reads no stream starts: each of its
// tables (or the one row of a SELECT without FROM) is read once, on a
// worker of the default source tier, as the runtime places it. It has no
// rate: the planner counts it as one item a second, which costs nothing
// next to a model.
func (l *lowerer) boundedSource(n logical.Node) *Stage {
	name := "VALUES"
	if sc, ok := n.(*logical.Scan); ok {
		name = sc.Name()
	}
	s := &Stage{Name: l.unique(name), Kind: "source", Node: n, Bounded: true}
	tier := l.inf.DefaultSourceTier()
	s.demand, s.units = 1, 1
	l.p.Sources = append(l.p.Sources, optimize.Source{Name: s.Name, Rate: 1, Tier: tier})
	l.stages = append(l.stages, s)
	return s
}

func (l *lowerer) model(x *logical.LateralModel, in []pending) *Stage {
	s := &Stage{Name: l.unique(x.Name), Kind: "ml", Model: x.Model, Node: x, Fused: carried(in)}
	op := optimize.Operator{Name: s.Name, Kind: optimize.KindML}
	// Accuracy inputs: the models whose outputs the arguments read, in
	// argument order (JellyBean 4.1 profiles index by them).
	inSizes := l.colSizes(x.Input)
	seen := map[string]bool{}
	for _, a := range x.Args {
		for _, c := range expr.Columns(a) {
			if c < len(inSizes) && inSizes[c].model != nil {
				name := l.stageOfModel(inSizes[c].model)
				if name != "" && !seen[name] {
					seen[name] = true
					op.AccuracyInputs = append(op.AccuracyInputs, name)
				}
			}
		}
	}
	mix := l.classMix(x.Model)
	s.ClassFreq = mix
	for _, v := range x.Model.Variants {
		ov := optimize.Variant{Name: v.Name, ProxyCost: v.ProxyCost, LatencyMs: map[string]float64{}}
		acc := v.Accuracy
		if mix != nil {
			acc = v.ExpectedAccuracy(mix)
		}
		ov.Accuracy = &acc
		if len(op.AccuracyInputs) > 0 {
			for _, r := range v.Profile {
				if len(r.Inputs) == len(op.AccuracyInputs) {
					ov.Profile = append(ov.Profile, optimize.AccuracyRow{Inputs: r.Inputs, Output: r.Output})
				}
			}
		}
		best := math.Inf(1)
		for k, lat := range v.Latency {
			ms := lat.At(l.opt.Percentile)
			ov.LatencyMs[k] = ms
			best = math.Min(best, ms)
		}
		// A worker whose sessions run with another thread count than its
		// type's profile was measured with gets the profile of its own
		// count, where the catalog has one (measured by tierflow profile
		// --threads): a real-size network's time per item is about half
		// with two threads.
		for _, m := range l.machines {
			lat, ok := v.Latency[m.Name]
			if !ok && m.Type != nil {
				lat, ok = v.Latency[m.Type.Name]
			}
			if t := m.ModelThreads(); ok && len(lat.ByThreads) > 0 && t > 0 && t != lat.Threads {
				ms := lat.ForThreads(t).At(l.opt.Percentile)
				ov.LatencyMs[m.Name] = ms
				best = math.Min(best, ms)
			}
		}
		if ov.ProxyCost == 0 && !math.IsInf(best, 1) {
			// The prototype ranks variants by latency on the strongest worker.
			ov.ProxyCost = best
		}
		op.Variants = append(op.Variants, ov)
	}
	op.Variants, s.Estimated = l.estimate(x.Model, op.Variants, len(op.AccuracyInputs) > 0)
	l.p.Operators = append(l.p.Operators, op)
	l.edges(s, x.Input, in, l.adaptedInputs(x))
	l.stages = append(l.stages, s)
	return s
}

func (l *lowerer) stageOfModel(m *logical.LateralModel) string {
	for _, s := range l.stages {
		if s.Node == logical.Node(m) {
			return s.Name
		}
	}
	return ""
}

// relational places a join or union that no model follows on its own workers.
func (l *lowerer) relational(n logical.Node, in []pending) *Stage {
	name := "Output"
	for _, c := range append([]logical.Node{n}, carried(in)...) {
		switch c.(type) {
		case *logical.Union:
			name = "Union"
		case *logical.Join:
			name = "Join"
		}
	}
	s := &Stage{Name: l.unique(name), Kind: "relational", Node: n, Fused: carried(in)}
	v := optimize.Variant{Name: "default", ProxyCost: RelationalLatencyMs, LatencyMs: map[string]float64{}}
	for _, t := range l.inf.WorkerTypes {
		v.LatencyMs[t.Name] = RelationalLatencyMs
	}
	l.p.Operators = append(l.p.Operators, optimize.Operator{Name: s.Name, Kind: optimize.KindRelational, Variants: []optimize.Variant{v}})
	var below logical.Node = n
	if len(n.Children()) == 1 {
		below = n.Children()[0]
	}
	l.edges(s, below, in, nil)
	l.stages = append(l.stages, s)
	return s
}

// edges adds the in-edges of stage s, whose input rows have the schema of
// node below. adapted (by variant of s's model) are the columns resized
// before the link when that variant runs: such an edge carries their
// resized bytes for it.
func (l *lowerer) edges(s *Stage, below logical.Node, in []pending, adapted map[string]adaptedInput) {
	first := len(l.p.Edges)
	defer func() {
		r := l.opt.InputRatio[s.Name]
		if r <= 0 || s.demand <= 0 || s.units <= 0 {
			return
		}
		k := r * s.units / s.demand
		s.demand *= k
		for i := first; i < len(l.p.Edges); i++ {
			l.p.Edges[i].Ratio *= k
		}
	}()
	sizes := l.colSizes(below)
	for i, p := range in {
		d := p.stage.outRate() * p.ratio
		if i == 0 || d < s.demand {
			s.demand = d
		}
		if u := p.stage.units * p.unitScale(); i == 0 || u < s.units {
			s.units = u
		}
		s.Inputs = append(s.Inputs, p.stage.Name)
		e := optimize.Edge{From: p.stage.Name, To: s.Name, Ratio: p.ratio}
		if p.stage.Kind == "ml" {
			e.Ratio *= p.stage.Model.Ratio()
		}
		// The columns that come from p's branch cross the link.
		var fixed float64
		shares := 0.0
		var own *logical.LateralModel
		if m, ok := p.stage.Node.(*logical.LateralModel); ok {
			own = m
		}
		for _, c := range l.branchColumns(below, p.stage) {
			cs := sizes[c]
			switch {
			case own != nil && cs.model == own:
				shares += cs.share
			case cs.model != nil:
				// An earlier model's output riding along: its mean size.
				fixed += cs.share * meanKB(cs.model.Model)
			case p.stage.Kind == "source" || cs.payload:
				fixed += cs.kb
			default:
				// Ids and timestamps riding along with a model's output are
				// within the message overhead its measured size includes.
			}
		}
		e.KB = fixed
		if own != nil && shares > 0 {
			for _, v := range own.Model.Variants {
				e.Sizes = append(e.Sizes, optimize.MessageSize{FromVariant: v.Name, KB: fixed + shares*v.OutputKB})
			}
			e.KB = fixed + shares*own.Model.Variants[0].OutputKB
		}
		l.adaptedSizes(&e, s, p.stage, own, shares, fixed, sizes, below, adapted)
		l.p.Edges = append(l.p.Edges, e)
	}
}

func meanKB(m *catalog.Model) float64 {
	t := 0.0
	for _, v := range m.Variants {
		t += v.OutputKB
	}
	return t / float64(len(m.Variants))
}

// branchColumns returns the indexes of below's output columns that come from
// stage st's branch.
func (l *lowerer) branchColumns(below logical.Node, st *Stage) []int {
	n := len(below.Schema().Fields())
	var out []int
	for i := 0; i < n; i++ {
		if l.columnFrom(below, i, st) {
			out = append(out, i)
		}
	}
	return out
}

// columnFrom reports whether column i of n is computed within st's branch
// (from its node or anything below it).
func (l *lowerer) columnFrom(n logical.Node, i int, st *Stage) bool {
	if n == st.Node {
		return true
	}
	anc, indexed := l.ancestors(st.Node)
	if indexed && !anc[n] {
		return false
	}
	switch x := n.(type) {
	case *logical.Join:
		nl := len(x.Left.Schema().Fields())
		if i < nl {
			return l.columnFrom(x.Left, i, st)
		}
		if x.Kind.LeftOnly() {
			return false // a mark
		}
		return l.columnFrom(x.Right, i-nl, st)
	case *logical.Project:
		cols := expr.Columns(x.Exprs[i])
		for _, c := range cols {
			if l.columnFrom(x.Input, c, st) {
				return true
			}
		}
		return false
	case *logical.LateralModel:
		nin := len(x.Input.Schema().Fields())
		if i < nin {
			return l.columnFrom(x.Input, i, st)
		}
		return false
	case *logical.Aggregate:
		return l.under(n, st.Node)
	case *logical.Scan:
		return false
	}
	children := n.Children()
	if indexed && len(anc) < len(children) {
		// A wide union: only the children on st's way up can hold it.
		children = nil
		for a := range anc {
			if slices.Contains(l.parents[a], n) {
				children = append(children, a)
			}
		}
		if st.Node != nil && slices.Contains(l.parents[st.Node], n) {
			children = append(children, st.Node)
		}
	}
	for _, c := range children {
		if i < len(c.Schema().Fields()) && l.columnFrom(c, i, st) {
			return true
		}
	}
	return false
}

// under reports whether target lies in n's subtree.
func (l *lowerer) under(n, target logical.Node) bool {
	if n == target {
		return true
	}
	if anc, indexed := l.ancestors(target); indexed {
		return anc[n]
	}
	return contains(n, target)
}

// ancestors returns the nodes above target in the plan lowered; false when
// target is not in it (a plan rewritten since), where callers walk down.
func (l *lowerer) ancestors(target logical.Node) (map[logical.Node]bool, bool) {
	if l.root == nil || target == nil {
		return nil, false
	}
	if l.parents == nil {
		l.parents = map[logical.Node][]logical.Node{}
		l.above = map[logical.Node]map[logical.Node]bool{}
		logical.Walk(l.root, func(x logical.Node) bool {
			for _, c := range x.Children() {
				l.parents[c] = append(l.parents[c], x)
			}
			return true
		})
	}
	if a, ok := l.above[target]; ok {
		return a, true
	}
	if _, ok := l.parents[target]; !ok && target != l.root {
		return nil, false
	}
	a := map[logical.Node]bool{}
	queue := []logical.Node{target}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		for _, p := range l.parents[x] {
			if !a[p] {
				a[p] = true
				queue = append(queue, p)
			}
		}
	}
	l.above[target] = a
	return a, true
}

func contains(n, target logical.Node) bool {
	found := false
	logical.Walk(n, func(x logical.Node) bool {
		if x == target {
			found = true
		}
		return !found
	})
	return found
}

// measuredKB is the catalog's measured size of what a function call makes
// (a crop of a frame), where the catalog has one.
func (l *lowerer) measuredKB(e expr.Expr) (float64, bool) {
	for {
		c, ok := e.(*expr.Cast)
		if !ok {
			break
		}
		e = c.Expr
	}
	call, ok := e.(*expr.Call)
	if !ok || l.cat == nil {
		return 0, false
	}
	if f := l.cat.Function(call.Func); f != nil {
		return f.OutputKB, true
	}
	return 0, false
}

// colSizes tells where each output column's bytes come from.
func (l *lowerer) colSizes(n logical.Node) []colSize {
	if s, ok := l.sizes[n]; ok {
		return s
	}
	var out []colSize
	est := func(i int) colSize {
		f := n.Schema().Field(i)
		return colSize{kb: logical.EstimatedBytes(f) / 1024, payload: logical.IsPayload(f)}
	}
	switch x := n.(type) {
	case *logical.Scan:
		src := x.SourceColumns()
		total := 0.0
		for _, c := range src {
			f, _ := c.Field()
			total += logical.EstimatedBytes(f)
		}
		for _, i := range x.Columns {
			f, _ := src[i].Field()
			cs := colSize{kb: logical.EstimatedBytes(f) / 1024, payload: logical.IsPayload(f)}
			if x.Stream != nil && x.Stream.ItemKB > 0 && total > 0 {
				// The measured item size, split by the columns' estimated
				// sizes, so that reading every column costs exactly it.
				cs.kb = x.Stream.ItemKB * logical.EstimatedBytes(f) / total
			}
			out = append(out, cs)
		}
	case *logical.LateralModel:
		out = append(out, l.colSizes(x.Input)...)
		total := 0.0
		for _, f := range x.Out {
			total += logical.EstimatedBytes(f)
		}
		for i, f := range x.Out {
			share := 1.0 / float64(len(x.Out))
			if total > 0 {
				share = logical.EstimatedBytes(f) / total
			}
			out = append(out, colSize{model: x, out: i, share: share, payload: true})
		}
	case *logical.Project:
		in := l.colSizes(x.Input)
		for i, e := range x.Exprs {
			if c, ok := e.(*expr.Column); ok && c.Index < len(in) {
				out = append(out, in[c.Index])
			} else if kb, ok := l.measuredKB(e); ok {
				out = append(out, colSize{kb: kb, payload: true})
			} else {
				out = append(out, est(i))
			}
		}
	case *logical.Join:
		out = append(out, l.colSizes(x.Left)...)
		switch x.Kind {
		case logical.SemiJoin, logical.AntiJoin:
		case logical.MarkJoin:
			out = append(out, est(len(out)))
		default:
			out = append(out, l.colSizes(x.Right)...)
		}
	case *logical.WindowFuncs:
		// The input's columns, then one estimated column per function.
		out = append(out, l.colSizes(x.Input)...)
		for i := len(out); i < len(x.Schema().Fields()); i++ {
			out = append(out, est(i))
		}
	case *logical.Aggregate:
		in := l.colSizes(x.Input)
		for i := range x.Schema().Fields() {
			if i < len(x.Group) {
				if c, ok := x.Group[i].(*expr.Column); ok && c.Index < len(in) {
					out = append(out, in[c.Index])
					continue
				}
			}
			out = append(out, est(i))
		}
	default:
		if ch := n.Children(); len(ch) > 0 {
			out = l.colSizes(ch[0])
		}
	}
	l.sizes[n] = out
	return out
}

// endToEnd copies the sink model's measured workflow accuracies, naming the
// operators that run the listed models.
func (l *lowerer) endToEnd(sink *Stage) {
	if sink == nil || sink.Model == nil || sink.Model.EndToEnd == nil {
		return
	}
	ee := sink.Model.EndToEnd
	ops := make([]string, len(ee.Models))
	for i, m := range ee.Models {
		var found []string
		for _, s := range l.stages {
			if s.Model != nil && strings.EqualFold(s.Model.Name, m) {
				found = append(found, s.Name)
			}
		}
		if len(found) != 1 {
			// The query does not use the listed model exactly once: the table
			// does not describe this workflow; profiles decide.
			return
		}
		ops[i] = found[0]
	}
	t := &optimize.EndToEndAccuracy{Operators: ops}
	for _, r := range ee.Rows {
		t.Rows = append(t.Rows, optimize.EndToEndRecord{Variants: r.Variants, Accuracy: r.Accuracy})
	}
	l.p.EndToEnd = t
}

// SortedWorkerTypes lists the worker types that some variant of m can run on.
func SortedWorkerTypes(m *catalog.Model) []string {
	set := map[string]bool{}
	for _, v := range m.Variants {
		for k := range v.Latency {
			set[k] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
