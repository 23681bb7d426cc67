package coordinator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/session"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/optimize"
	"github.com/tierflow/tierflow/planner/physical"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/policy"
	"github.com/tierflow/tierflow/runtime/security"
)

// tiers orders the tiers: the infrastructure file's first, then the usual
// edge < hub < cloud, then any other registered tier by name.
func (c *Coordinator) tiers(ws []deploy.Worker) []string {
	var out []string
	add := func(t string) {
		if t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	if c.cfg.Infra != nil {
		for _, t := range c.cfg.Infra.Tiers {
			add(t.Name)
		}
	}
	present := map[string]bool{}
	for _, w := range ws {
		present[w.Tier] = true
	}
	for _, t := range []string{"device", "edge", "fog", "hub", "cloud"} {
		if present[t] {
			add(t)
		}
	}
	var rest []string
	for t := range present {
		if !slices.Contains(out, t) {
			rest = append(rest, t)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// placed is how place placed a query: the placement, the script the
// workers must build (rewritten, with the plan's variants and batching, when
// the optimizer placed it), a note on how it was placed, the optimizer's
// estimate and plan (nil when placed by rules), and its LATENCY bound in
// milliseconds.
type placed struct {
	placement *deploy.Placement
	script    deploy.Script
	note      string
	estimate  *deploy.Estimate
	plan      *physical.Plan
	sloMs     float64
	// inputRows: a best-effort query's rows to read (inputRows).
	inputRows int64
	// assumed is what plan assumed of the live estimates (nil by rules).
	assumed *control.Assumed
	// bound: the query as written (supervisor.bound); root the plan the
	// workers run; workers those it was placed among; settings the
	// script's planner settings the optimizer planned with (nil by
	// rules).
	bound    *logical.Plan
	root     logical.Node
	workers  []deploy.Worker
	settings map[string]string
}

// workerLoad is how many operator instances of the queries that run now,
// but query, each worker runs (their placements as deployed).
func (c *Coordinator) workerLoad(query string) map[string]int {
	load := map[string]int{}
	for _, s := range c.supervisors() {
		if s.id == query {
			continue
		}
		s.mu.Lock()
		if p := s.info.Placement; p != nil && !s.ended() {
			for _, op := range p.Operators {
				for _, wi := range op.Workers {
					if wi >= 0 && wi < len(p.Workers) {
						load[p.Workers[wi]]++
					}
				}
			}
		}
		s.mu.Unlock()
	}
	return load
}

// leastLoaded maps the workers a plan uses onto the least loaded workers
// the cost model cannot tell apart from them (the same tier, location and
// type, and the same capacity reserved by running queries): the plan's
// cost is the same on any of them, and the optimizer, which does not see
// what relational queries load a worker with, would otherwise break the
// tie the same way for every query. Within each such class the worker the
// plan uses most goes to the least loaded one; the map is a permutation
// of each class.
func leastLoaded(p *physical.Plan, ws []deploy.Worker, load map[string]int, reserved []optimize.Reservation) map[string]string {
	busy := map[string]float64{}
	for _, r := range reserved {
		busy[r.Worker] += r.Busy
	}
	type class struct {
		tier, location, typ string
		busy                float64
	}
	classOf := map[string]class{}
	members := map[class][]deploy.Worker{}
	for _, w := range ws {
		k := class{w.Tier, w.Location, w.Type, busy[w.Name]}
		classOf[w.Name] = k
		members[k] = append(members[k], w)
	}
	uses := map[string]int{}
	for _, op := range p.Operators {
		for _, w := range op.Workers {
			uses[w.Name]++
		}
	}
	to := map[string]string{}
	for _, all := range members {
		var used []string
		for _, w := range all {
			if uses[w.Name] > 0 {
				used = append(used, w.Name)
			}
		}
		if len(used) == 0 || len(used) == len(all) {
			continue
		}
		slices.SortStableFunc(used, func(a, b string) int {
			if d := uses[b] - uses[a]; d != 0 {
				return d
			}
			return strings.Compare(a, b)
		})
		free := deploy.ByLoad(all, load)
		for i, n := range used {
			if free[i].Name != n {
				to[n] = free[i].Name
			}
		}
	}
	return to
}

// forPolicies is the placement as the per-query policies see it.
func (pl placed) forPolicies(query string, nc *nats.Conn, kept bool) *policy.Placed {
	return &policy.Placed{Query: query, Bound: pl.bound, Root: pl.root, Workers: pl.workers, Placement: pl.placement, Plan: pl.plan,
		Variants: pl.script.Variants, Settings: pl.settings, Kept: kept, Conn: nc}
}

// place compiles the script as every worker will and places it: where the
// optimizer puts it when it can plan the query against the registered
// workers ws (a model call, a catalog with profiles), by runtime/deploy's
// default rules otherwise, under cons (what the policies asked of the
// plan: runtime/control.Constraints) and around the capacity the
// per-cluster policies reserve for the running queries; they also admit
// the placement or refuse it.
func (c *Coordinator) place(ctx context.Context, req deploy.SubmitRequest, ws []deploy.Worker, cons control.Constraints) (placed, error) {
	ws = slices.DeleteFunc(slices.Clone(ws), func(w deploy.Worker) bool { return slices.Contains(cons.Exclude, w.Name) })
	pins := cons.Variants
	script := req.Script
	// The catalog is checked here; the files the compile opens, in
	// execOptions.
	// The coordinator's own catalog (--catalog) is its operator's file,
	// not a user's: it is read even where the roots refuse every path.
	own := script.Catalog != "" && script.Catalog == c.cfg.Catalog
	if own {
		script.Catalog = ""
	}
	if err := c.cfg.DataRoots.ConfineScript(&script, &exec.Options{}); err != nil {
		return placed{}, err
	}
	if own {
		script.Catalog = c.cfg.Catalog
	}
	if c.cfg.CheckModelArgs != nil {
		script.CheckModelArgs = c.cfg.DataRoots.ConfineModelArgs(c.cfg.CheckModelArgs(script.BaseDir), script.BaseDir)
	}
	bound, cat, err := script.Bind(nil)
	if err != nil {
		return placed{}, err
	}
	// The query's sources and sinks act with its owner's authority: a
	// subject of the engine's, or one the owner was not granted, is
	// refused before anything is placed (and again by every worker).
	if err := security.CheckCatalog(cat, c.access(req.Owner)); err != nil {
		return placed{}, err
	}
	streams, err := c.ensureStreams(req.Owner, jetStreamSubjects(cat))
	if err != nil {
		return placed{}, err
	}
	if s := c.supervisor(req.Query); s != nil {
		s.mu.Lock()
		s.jetstream, s.streams = jetStreamSubjects(cat), streams
		s.mu.Unlock()
	}
	if sk, ok := bound.Root.(*logical.Sink); ok && sk.Sink != nil && !deploy.WorkersWrite(sk.Sink.Kind) {
		// An analysed query (EXPLAIN ANALYZE) never gets here: it runs
		// the SELECT under such a sink (deploy.Script.Bind).
		return placed{}, fmt.Errorf("%s: %w: INSERT INTO %s (%s) on a cluster; submit the SELECT and write its streamed results (tierflow submit --output)", sk.Pos, ErrUnsupported, sk.Sink.Name, sk.Sink.Kind)
	}
	o := deploy.Options{Tiers: c.tiers(ws), Load: c.workerLoad(req.Query)}
	// The optimizer breaks ties between equal workers in the order given:
	// the least loaded first, as the rules do.
	ws = deploy.ByLoad(ws, o.Load)
	if c.cfg.Infra != nil {
		o.SourceTier = c.cfg.Infra.DefaultSourceTier()
	}
	cand := policy.Candidate{Query: req.Query, Objectives: bound.Objectives}
	clusters := policy.Clusters(c.policies())
	var res *planner.Result
	perr := errors.New("placement by rules")
	if c.cfg.Placement != PlaceRules {
		reserved := append(slices.Clone(cons.Reserved), policy.Reserve(clusters, cand, c.view(req.Query), ws)...)
		res, perr = c.optimize(ctx, bound, cat, ws, o.Tiers, reserved, script.Planner, cons.Live, cons.ClassMix)
		if perr == nil {
			res.Physical.RenameWorkers(leastLoaded(res.Physical, ws, o.Load, reserved))
		}
		if errors.Is(perr, planner.ErrInfeasible) {
			// The planner did plan the query, and no plan meets what it
			// asks (with what running queries leave): running another one
			// would ignore the objectives.
			return placed{}, perr
		}
	}
	slo := bound.Objectives.LatencyMs
	script.Priority, script.LatencyMs = bound.Objectives.Priority, slo
	var in int64
	if script.Priority == string(lang.PriorityBestEffort) {
		in = inputRows(bound, script.BaseDir)
	}
	if perr == nil {
		planned := script
		planned.Rewrite, planned.Variants, planned.Batches = true, res.Physical.Variants(), batches(res.Physical)
		for call, v := range pins { // a policy's choice over the planner's
			planned.Variants[call] = v
		}
		q, err := planned.BuildPlan(res.Rewritten, c.execOptions(planned.Variants))
		if err == nil {
			po := o
			po.Physical, po.Lowered = res.Physical, res.Lowered
			p, err := deploy.Place(req.Query, q.Graph(), res.Rewritten, ws, po)
			var slowed string
			if err == nil {
				if slowed, err = policy.Admit(clusters, cand, c.view(req.Query), p, res.Physical); err != nil {
					return placed{}, err
				}
			}
			if err == nil {
				note := fmt.Sprintf("optimizer (%s): compute %.4g + network %.4g per hour, accuracy %.4g, throughput %.4g",
					res.Physical.Strategy, res.Physical.ComputeCost, res.Physical.NetworkCost, res.Physical.Accuracy, res.Physical.Throughput)
				if r := res.Physical.Targets.Reserved; len(r) > 0 {
					note += "; around running queries (" + reservedText(r) + ")"
				}
				if slowed != "" {
					note += "; " + slowed
				}
				return placed{placement: p, script: planned, note: note, estimate: deploy.EstimateOf(res.Physical, bound.Objectives.Throughput),
					plan: res.Physical, sloMs: slo, assumed: assumedOf(res.Physical, ws), inputRows: in,
					bound: bound, root: res.Rewritten.Root, workers: ws, settings: script.Planner}, nil
			}
			perr = err
		} else if deploy.KindOf(err) == deploy.KindInput {
			// The plan's query cannot be built for a reason of its own (a
			// model file that is not there): building it by the default
			// rules would fail the same way and blame another variant.
			return placed{}, err
		} else {
			perr = err
		}
	}
	if len(pins) > 0 {
		script.Variants = maps.Clone(pins)
	}
	q, plan, err := script.Build(nil, c.execOptions(script.Variants))
	if err != nil {
		return placed{}, err
	}
	p, err := deploy.Place(req.Query, q.Graph(), plan, ws, o)
	if err != nil {
		return placed{}, err
	}
	slowed, err := policy.Admit(clusters, cand, c.view(req.Query), p, nil)
	if err != nil {
		return placed{}, err
	}
	note := "default placement (" + perr.Error() + ")"
	if slowed != "" {
		note += "; " + slowed
	}
	return placed{placement: p, script: script, note: note, sloMs: slo, inputRows: in, bound: bound, root: bound.Root, workers: ws}, nil
}

// reservedText is a reservation list for the planner note.
func reservedText(rs []optimize.Reservation) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%s %.0f%% busy by %s", r.Worker, 100*min(r.Busy, 1), strings.Join(r.By, ",")))
	}
	return strings.Join(parts, "; ")
}

// batches are the plan's dynamic batching by model operator.
func batches(p *physical.Plan) map[string]deploy.Batch {
	out := map[string]deploy.Batch{}
	for _, op := range p.Operators {
		if op.Batch != nil {
			out[op.Name] = deploy.Batch{MaxBatch: op.Batch.MaxBatch, MaxDelay: op.Batch.MaxDelay}
		}
	}
	return out
}

func (c *Coordinator) execOptions(variants map[string]string) exec.Options {
	// The compile only shapes the graph: it runs none of a user's
	// subqueries (their answers are the workers' to compute, within the
	// query's memory).
	eo := exec.Options{Output: discardWriter{}, Stdout: io.Discard, ShapeOnly: true, MemoryLimit: c.cfg.Limits.SpillBytes()}
	if c.cfg.Exec != nil {
		c.cfg.Exec(&eo, deploy.ExecPart{Variants: variants})
	}
	if eo.Sink != nil {
		// The compile only shapes the graph: the coordinator never opens
		// a query's sink (creating a JetStream stream is its owner's
		// data user's business, on the worker that writes it).
		eo.Sink = func(*catalog.Sink, *arrow.Schema) (sinks.Writer, error) { return discardWriter{}, nil }
	}
	// The catalog was checked by place; Catalog is empty here.
	_ = c.cfg.DataRoots.ConfineScript(&deploy.Script{}, &eo)
	return eo
}

// optimize plans a bound query against the registered workers: their
// tiers, types and locations, with prices, links and tier fan-outs from the
// coordinator's infrastructure file.
//
// live, when set, replaces the catalog's and the infrastructure's numbers
// with measured ones (applyLive): the re-plan of the control loop.
func (c *Coordinator) optimize(ctx context.Context, bound *logical.Plan, cat *catalog.Catalog, ws []deploy.Worker, tiers []string, reserved []optimize.Reservation, settings map[string]string, live *control.Overrides, mix map[string]map[string]float64) (*planner.Result, error) {
	// The script's SET planner.* before the query (checked where it ran).
	set, err := session.FromValues(settings)
	if err != nil {
		return nil, err
	}
	file := c.cfg.Infra
	inf := &infra.Infra{}
	if file != nil {
		inf.Links, inf.DefaultLink, inf.SourceTier = slices.Clone(file.Links), file.DefaultLink, file.SourceTier
	}
	for _, t := range tiers {
		tier := &infra.Tier{Name: t}
		if file != nil {
			if ft := file.Tier(t); ft != nil {
				tier.Locations = ft.Locations
			}
		}
		inf.Tiers = append(inf.Tiers, tier)
	}
	seen := map[string]bool{}
	for _, w := range ws {
		typ := w.Type
		if typ == "" {
			typ = "default"
		}
		if !seen[typ] {
			seen[typ] = true
			var wt *infra.WorkerType
			if file != nil {
				wt = file.WorkerType(typ)
			}
			if wt == nil {
				wt = &infra.WorkerType{Name: typ}
			}
			inf.WorkerTypes = append(inf.WorkerTypes, wt)
		}
		inf.Workers = append(inf.Workers, &infra.Worker{Name: w.Name, Type: typ, Tier: w.Tier, Location: w.Location, Threads: w.Threads})
	}
	opts := set.Planner
	opts.Strategy = "" // the optimizer's default unless the script set one
	if _, ok := settings["planner.strategy"]; ok {
		opts.Strategy = set.Planner.Strategy
	}
	opts.Reserved = reserved
	applyLive(bound, inf, live)
	opts.Throughput = liveThroughput(bound, opts.Throughput, live)
	if live != nil {
		opts.InputRatio = live.InputRatios
	}
	if b := c.replanBudget(); live != nil && (opts.Optimize.TimeBudget <= 0 || opts.Optimize.TimeBudget > b) {
		opts.Optimize.TimeBudget = b
	}
	opts.Optimize.TimeBudget = submittedBudget(opts.Optimize.TimeBudget)
	opts.Optimize = submittedSearch(opts.Optimize)
	opts.ClassMix = mix // a DATA AWARE query's live class mix (a data-aware policy's)
	res, err := planner.PlanLogical(ctx, bound, cat, inf, opts)
	if err != nil {
		return nil, err
	}
	if err := res.Runnable(); err != nil {
		return nil, err
	}
	return res, nil
}

// submittedBudget is the optimizer's time budget for a submitted script: what
// it SET (planner.time_budget) up to the optimizer's own default. A compile
// holds one of the coordinator's compilers (two per user) until it is
// answered, and SET planner.time_budget = '1000h' with the exhaustive
// strategy held them for as long as the search ran.
func submittedBudget(set time.Duration) time.Duration {
	return min(set, optimize.DefaultTimeBudget) // zero or less: the strategy's default
}

// maxSubmittedSearch is how far past the optimizer's defaults a submitted
// script's SET planner.topo_orders, beam_ms and beam_wa reach.
const maxSubmittedSearch = 100

// submittedSearch bounds the heuristic searches a submitted script SET:
// their work grows with the counts a user types, not with the query (SET
// planner.topo_orders = 1000000000 would hold a compiler 26 minutes trying
// orders of a 5-operator query, and the prototype's strategy lists the
// orders it tries), so each is at most maxSubmittedSearch times its
// default, where the time budget bounds the exact ones.
func submittedSearch(o optimize.Options) optimize.Options {
	o.TopoOrders = min(o.TopoOrders, maxSubmittedSearch*optimize.DefaultTopoOrders)
	o.BeamModelSelection = min(o.BeamModelSelection, maxSubmittedSearch*optimize.DefaultBeam)
	o.BeamWorkerAssignment = min(o.BeamWorkerAssignment, maxSubmittedSearch*optimize.DefaultBeam)
	return o
}

// discardWriter is the output of the coordinator's compile, which never runs.
type discardWriter struct{}

func (discardWriter) Write(arrow.Record) error { return nil }
func (discardWriter) Close() error             { return nil }

// policies are the coordinator's policies (Config.Policies).
func (c *Coordinator) policies() []policy.Policy {
	if c.cfg.Policies == nil {
		return policy.Defaults()
	}
	return c.cfg.Policies
}

// view is the cluster as the per-cluster policies see it at a placement of
// query self: the registered workers and the other queries that deploy or
// run.
func (c *Coordinator) view(self string) policy.View {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := policy.View{Workers: make(map[string]deploy.WorkerInfo, len(c.workers))}
	for name, w := range c.workers {
		v.Workers[name] = *w
	}
	for _, id := range c.order {
		s := c.queries[id]
		if id == self {
			continue
		}
		s.mu.Lock()
		if !s.ended() {
			v.Running = append(v.Running, policy.Running{Query: id, Priority: s.info.Priority, Plan: s.plan, Sched: s.info.Sched})
		}
		s.mu.Unlock()
	}
	return v
}
