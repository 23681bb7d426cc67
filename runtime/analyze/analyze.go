// Package analyze holds a run of a query against its plan: what EXPLAIN
// ANALYZE prints. It reads what the coordinator knows when a query has ended
// (deploy.QueryInfo: the plan's estimate, the placement, every operator
// instance's counters and latency histogram, every link's meters) and the
// infrastructure's prices, and compares, per source, operator, worker and
// link, the measured rates, latencies, bytes and costs with the estimates
// (JellyBean 6.2: actual against expected throughput).
//
// analyze imports runtime/deploy, planner/infra, dataflow and relay; never
// the coordinator, the cluster or cmd.
package analyze

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// Tolerances of the checks: the achieved throughput within 5% of the target,
// the measured network and compute costs within 10% of the estimates.
const (
	ThroughputTolerance = 0.05
	NetworkTolerance    = 0.10
	ComputeTolerance    = 0.10
)

// gib is the planner's GB: its prices are per 1024^3 bytes (KB x 3600 /
// 1024^2 per hour).
const gib = 1 << 30

// Report is a run held against its plan.
type Report struct {
	Query   string `json:"query"`
	State   string `json:"state"`
	Planner string `json:"planner"`
	// Window is the run's length, from the sources' start to the last
	// worker's end, as the coordinator saw it. Span is the time the data
	// took to go through (dataSpan): the sources' span, plus the backlog
	// the last rows met on their way (a drain beyond the pipeline's own
	// latency lowers the rates; deployment and teardown do not). Rates and
	// costs per hour are over Span.
	Window    time.Duration `json:"window_ns"`
	Span      time.Duration `json:"span_ns"`
	Checks    []Check       `json:"checks"`
	Sources   []SourceRow   `json:"sources"`
	Operators []OperatorRow `json:"operators"`
	Workers   []WorkerRow   `json:"workers"`
	Links     []LinkRow     `json:"links"`
	// Dropped is what the run dropped, by reason (dataflow.DropReasons):
	// measured rates leave these rows out.
	Dropped dataflow.DropCounts `json:"dropped,omitempty"`
	// Latency is the end-to-end latency of the result rows (ingest to
	// written); SLOMs the query's LATENCY bound (0: none) and SLOMissRate
	// the share of rows over it (nil without one).
	Latency     control.LatencyMs `json:"latency_ms"`
	SLOMs       float64           `json:"latency_slo_ms,omitempty"`
	SLOMissRate *float64          `json:"slo_miss_rate,omitempty"`
	// Sides are the rows the source-side adaptations sent at each side
	// over all the query's generations ("28:1200 20:310 14:95"; the
	// operators' Sides are the running generation's).
	Sides string `json:"sides,omitempty"`
	// Ran are the rows the model calls ran on each variant over all the
	// generations, where rows sent at a smaller side ran on the variant
	// of that side ("fit-28:1200 fit-14:95"; ml.FormatRan).
	Ran string `json:"ran,omitempty"`
	// Estimates are the coordinator's live estimates as the run ended.
	Estimates *control.Estimates `json:"estimates,omitempty"`
	// Replans is the plan history (each cut-over to a new plan, at an
	// epoch) and Recoveries the workers lost while the query ran.
	Replans []control.Replan `json:"replans,omitempty"`
	// SLOTimeline is the latency-SLO policy's per-source bandwidth and
	// variants over time (deploy.QueryInfo.SLOTimeline).
	SLOTimeline []control.SLOSample `json:"slo_timeline,omitempty"`
	Recoveries  []control.Recovery  `json:"recoveries,omitempty"`
}

// Check is one headline figure: estimated, measured, and whether the
// measurement is within the tolerance of the estimate (Tolerance 0: shown,
// not judged).
type Check struct {
	What      string  `json:"what"`
	Unit      string  `json:"unit"`
	Estimated float64 `json:"estimated"`
	Measured  float64 `json:"measured"`
	// Error is measured/estimated - 1 (nil when there is no estimate).
	Error     *float64 `json:"error,omitempty"`
	Tolerance float64  `json:"tolerance,omitempty"`
	OK        bool     `json:"ok"`
}

// SourceRow is one stream: the rate the plan assumed and the rate it was read.
type SourceRow struct {
	Name     string  `json:"name"`
	Tier     string  `json:"tier"`
	Rows     int64   `json:"rows"`
	Planned  float64 `json:"planned_rows_s"`
	Measured float64 `json:"measured_rows_s"`
	// Bounded: a table read once; the plan assumed no rate for it.
	Bounded bool `json:"bounded,omitempty"`
}

// OperatorRow is one dataflow operator over all its instances.
type OperatorRow struct {
	ID      int    `json:"id"`
	Name    string `json:"name"`
	Stage   string `json:"stage,omitempty"`
	Variant string `json:"variant,omitempty"`
	// Device is where a model call ran, as its instances report it (cpu,
	// cuda; with why when a GPU was not used).
	Device    string   `json:"device,omitempty"`
	Tier      string   `json:"tier"`
	Workers   []string `json:"workers"`
	RowsIn    int64    `json:"rows_in"`
	RowsOut   int64    `json:"rows_out"`
	Batches   int64    `json:"batches_in"`
	Estimated float64  `json:"estimated_rows_s"` // the stage's demand, on the operator that takes it; 0 elsewhere
	Measured  float64  `json:"measured_rows_s"`
	P50       float64  `json:"batch_ms_p50"`
	P90       float64  `json:"batch_ms_p90"`
	P99       float64  `json:"batch_ms_p99"`
	// Busy is the instances' callback time over the window, per instance
	// (1 is one instance busy all the time).
	Busy float64 `json:"busy"`
	// Labelled and Correct count, on a model call's label meter, the rows
	// that carried a label and those the model got right.
	Labelled int64 `json:"labelled,omitempty"`
	Correct  int64 `json:"correct,omitempty"`
	// Batching is how a model call's batcher cut its model batches (nil
	// for other operators).
	Batching *Batching `json:"batching,omitempty"`
	// Sides, on a LATENCY query's source-side adaptation, are the rows it
	// sent at each side as its link allowed ("28:1200 20:310 14:95",
	// largest first; ml.FormatSides); Ran, on a model call, the rows each
	// variant ran when rows of a smaller side ran on the variant of that
	// side ("fit-28:1200 fit-14:95"; ml.FormatRan).
	Sides string `json:"sides,omitempty"`
	Ran   string `json:"ran,omitempty"`
}

// Batching is a model call's measured batching over its instances: model
// batches run, rows in them, the largest, the batcher's target at the end
// (the largest over instances), and why each batch was cut: it reached the
// target size, its oldest row waited the max delay, or the input ended.
type Batching struct {
	Batches  int64 `json:"model_batches"`
	Rows     int64 `json:"model_rows"`
	MaxRows  int64 `json:"max_rows"`
	Target   int64 `json:"target"`
	CutSize  int64 `json:"cut_size"`
	CutDelay int64 `json:"cut_delay"`
	CutEnd   int64 `json:"cut_end"`
}

// WorkerRow is one worker of the query.
type WorkerRow struct {
	Name      string   `json:"name"`
	Tier      string   `json:"tier"`
	Type      string   `json:"type,omitempty"`
	Price     float64  `json:"price_per_hour"`
	Operators []string `json:"operators"`
	Estimated float64  `json:"estimated_items_s"` // the plan's items/s for its stages' model calls
	Measured  float64  `json:"measured_items_s"`
	Busy      float64  `json:"busy"`
	// Staged: the worker ran an operator of one of the plan's stages (a
	// model call, or a relational stage), which the plan priced. A worker
	// that only reads a source stands for the source's own device (a
	// camera), which the plan does not price (JellyBean, Eq. 1).
	Staged bool `json:"staged"`
}

// LinkRow is the traffic from one tier to another.
type LinkRow struct {
	From          string  `json:"from"`
	To            string  `json:"to"`
	Bytes         uint64  `json:"bytes"`
	Batches       uint64  `json:"batches"`
	EstimatedMBps float64 `json:"estimated_mib_s"`
	MeasuredMBps  float64 `json:"measured_mib_s"`
	PricePerGB    float64 `json:"price_per_gb"`
	EstimatedCost float64 `json:"estimated_cost_h"`
	MeasuredCost  float64 `json:"measured_cost_h"`
}

// Options add what QueryInfo does not carry.
type Options struct {
	// Infra prices links and workers (nil: the coordinator's measured
	// totals stand in, without a price per link or worker).
	Infra *infra.Infra
	// WorkerTypes maps worker names to their types (SHOW WORKERS).
	WorkerTypes map[string]string
}

// New holds q against its estimate.
func New(q deploy.QueryInfo, o Options) (*Report, error) {
	if q.Placement == nil {
		return nil, fmt.Errorf("analyze: query %s has no placement", q.Query)
	}
	start := q.Started
	if start.IsZero() {
		start = q.Submitted
	}
	if q.Ended.IsZero() {
		return nil, fmt.Errorf("analyze: query %s has not ended", q.Query)
	}
	r := &Report{Query: q.Query, State: q.State, Planner: q.Planner, Window: q.Ended.Sub(start), Span: dataSpan(q), Dropped: q.Dropped,
		Sides: ml.FormatSides(q.Sides()), Ran: ml.FormatRan(q.Sides())}
	if r.Span <= 0 {
		r.Span = r.Window
	}
	secs := r.Span.Seconds()
	if secs <= 0 {
		return nil, fmt.Errorf("analyze: query %s ran for %v", q.Query, r.Window)
	}
	est := q.Estimate
	if est == nil {
		est = &deploy.Estimate{}
	}

	r.operators(q, est, secs)
	r.sources(est, secs)
	r.workers(q, est, o, secs)
	r.links(q, est, o, secs)
	r.checks(q, est, o, secs)
	h, missed := q.EndToEnd()
	r.Latency, r.SLOMs, r.Estimates = control.Percentiles(h), q.LatencySLOMs, q.Estimates
	r.Replans, r.Recoveries, r.SLOTimeline = q.Replans, q.Recoveries, q.SLOTimeline
	// Rows dropped lazily before compute (past their deadline) missed too.
	if late := q.Dropped[dataflow.DropDeadline]; q.LatencySLOMs > 0 && int64(h.Count)+late > 0 {
		rate := float64(missed+late) / float64(int64(h.Count)+late)
		r.SLOMissRate = &rate
	}
	if h.Count > 0 {
		// The latency percentiles, held against LATENCY where the query
		// has one (shown, not judged: a percentile over the bound is what
		// the miss rate counts).
		for _, p := range []struct {
			name string
			v    float64
		}{{"p50", r.Latency.P50}, {"p95", r.Latency.P95}, {"p99", r.Latency.P99}} {
			c := check("end-to-end latency "+p.name, "ms", q.LatencySLOMs, p.v, 0)
			c.Error = nil
			r.Checks = append(r.Checks, c)
		}
		if r.SLOMissRate != nil {
			r.Checks = append(r.Checks, Check{What: fmt.Sprintf("rows over LATENCY %g ms", q.LatencySLOMs), Unit: "share", Measured: *r.SLOMissRate})
		}
	}
	return r, nil
}

// dataSpan is the time the run's data took to go through: the sources'
// span (first to last batch out of a source, plus one source batch's share:
// a paced source's first batch stands for the interval before it goes out,
// so B batches at a steady rate span B-1 intervals, not B), lengthened by
// the backlog its last rows met: the time from the last source batch to
// the last batch anywhere, less the time the first rows took from a source
// to the sinks. A workflow that keeps up delivers its last rows as soon
// after their source as its first ones (the pipeline's latency, 0.2-1 s
// for real-size networks, is not lost throughput: counted, a 12 s run of
// the OCR workflow read 8% under its rate); one that falls behind
// delivers them later, by the backlog, and its rates fall by as much.
// Without sinks that saw a batch, the whole drain counts. 0 when the
// workers did not report times.
func dataSpan(q deploy.QueryInfo) time.Duration {
	var first, lastSrc, last, firstSink, batches int64
	for _, s := range q.Operators {
		if s.Last > last {
			last = s.Last
		}
		if s.OperatorID >= len(q.Placement.Operators) {
			continue
		}
		name := q.Placement.Operators[s.OperatorID].Name
		switch {
		case strings.HasPrefix(name, "scan "):
			batches = max(batches, s.BatchesOut)
			if s.First > 0 && (first == 0 || s.First < first) {
				first = s.First
			}
			lastSrc = max(lastSrc, s.Last)
		case name == "sink" && s.First > 0 && (firstSink == 0 || s.First < firstSink):
			firstSink = s.First
		}
	}
	if first == 0 || last <= first {
		return 0
	}
	src := float64(lastSrc - first)
	if batches > 1 {
		src *= float64(batches) / float64(batches-1)
	}
	drain := float64(last - lastSrc)
	if firstSink > first {
		drain = max(0, drain-float64(firstSink-first))
	}
	if src <= 0 {
		return time.Duration(last - first)
	}
	return time.Duration(src + drain)
}

// opStats merges the instances of each dataflow operator.
type opStats struct {
	rowsIn, rowsOut, batches, busy int64
	labelled, correct              int64
	batching                       *Batching
	hist                           dataflow.Histogram
	instances                      int
	workers                        map[string]bool
	variants, devices              []string
	sides                          map[string]int64 // an adaptation's side_<n>, a model call's ran_<variant> counters
}

func (r *Report) operators(q deploy.QueryInfo, est *deploy.Estimate, secs float64) {
	p := q.Placement
	by := map[int]*opStats{}
	for _, s := range q.Operators {
		m := by[s.OperatorID]
		if m == nil {
			m = &opStats{workers: map[string]bool{}}
			by[s.OperatorID] = m
		}
		m.rowsIn += s.RowsIn
		m.rowsOut += s.RowsOut
		m.batches += s.BatchesIn
		m.busy += s.BusyNs
		m.hist.Add(s.BatchLatency)
		m.instances++
		for k, v := range s.Counters {
			if strings.HasPrefix(k, "side_") || strings.HasPrefix(k, ml.RanPrefix) {
				if m.sides == nil {
					m.sides = map[string]int64{}
				}
				m.sides[k] += v
			}
		}
		m.labelled += s.Counters["labelled"]
		m.correct += s.Counters["correct"]
		if n, ok := s.Counters["model_batches"]; ok {
			if m.batching == nil {
				m.batching = &Batching{}
			}
			b, c := m.batching, s.Counters
			b.Batches += n
			b.Rows += c["model_rows"]
			b.MaxRows = max(b.MaxRows, c["model_batch_max"])
			b.Target = max(b.Target, c["batch_target"])
			b.CutSize += c["cut_size"]
			b.CutDelay += c["cut_delay"]
			b.CutEnd += c["cut_flush"]
		}
		if v := s.Attributes["variant"]; v != "" && !contains(m.variants, v) {
			m.variants = append(m.variants, v)
		}
		if d := s.Attributes["device"]; d != "" && !contains(m.devices, d) {
			m.devices = append(m.devices, d)
		}
		if s.Worker >= 0 && s.Worker < len(p.Workers) {
			m.workers[p.Workers[s.Worker]] = true
		}
	}
	estimated := map[string]bool{} // stages whose demand is already shown
	for id, op := range p.Operators {
		m := by[id]
		if m == nil {
			m = &opStats{workers: map[string]bool{}}
		}
		row := OperatorRow{ID: id, Name: op.Name, Stage: op.Stage, Tier: op.Tier, RowsIn: m.rowsIn, RowsOut: m.rowsOut, Batches: m.batches,
			Labelled: m.labelled, Correct: m.correct, Batching: m.batching, Sides: ml.FormatSides(m.sides), Ran: ml.FormatRan(m.sides),
			Measured: float64(m.rowsIn) / secs,
			P50:      ms(m.hist.Quantile(0.5)), P90: ms(m.hist.Quantile(0.9)), P99: ms(m.hist.Quantile(0.99))}
		if m.instances > 0 {
			row.Busy = float64(m.busy) / 1e9 / secs / float64(m.instances)
		}
		for w := range m.workers {
			row.Workers = append(row.Workers, w)
		}
		sort.Strings(row.Workers)
		sort.Strings(m.devices)
		sort.Strings(m.variants)
		row.Device = strings.Join(m.devices, ", ")
		if st := stage(est, op.Stage); st != nil {
			row.Variant = st.Variant
			// The demand is the items entering the stage: show it on the
			// model call (or the stage's first operator), where they enter.
			takes := strings.HasPrefix(op.Name, "model ") || st.Model == "" && !estimated[st.Name]
			if takes && !estimated[st.Name] {
				row.Estimated = st.Demand
				estimated[st.Name] = true
			}
		}
		if len(m.variants) > 0 {
			row.Variant = strings.Join(m.variants, ", ") // what ran, where a plan's choice may differ
		}
		if strings.HasPrefix(op.Name, "scan ") {
			row.Measured = float64(m.rowsOut) / secs
		}
		r.Operators = append(r.Operators, row)
	}
}

func (r *Report) sources(est *deploy.Estimate, secs float64) {
	for _, op := range r.Operators {
		if !strings.HasPrefix(op.Name, "scan ") {
			continue
		}
		row := SourceRow{Name: strings.TrimPrefix(op.Name, "scan "), Tier: op.Tier, Rows: op.RowsOut, Measured: float64(op.RowsOut) / secs}
		for _, s := range est.Sources {
			if s.Name == op.Stage || op.Stage == "" && (s.Stream == row.Name || s.Name == row.Name) {
				row.Planned, row.Bounded = s.Rate, s.Bounded
				if s.Bounded {
					row.Planned = 0
				}
			}
		}
		r.Sources = append(r.Sources, row)
	}
}

func (r *Report) workers(q deploy.QueryInfo, est *deploy.Estimate, o Options, secs float64) {
	rows := map[string]*WorkerRow{}
	for _, name := range q.Placement.Workers {
		w := &WorkerRow{Name: name, Type: o.WorkerTypes[name]}
		if o.Infra != nil {
			if wt := o.Infra.WorkerType(w.Type); wt != nil {
				w.Price = wt.Price
			}
		}
		rows[name] = w
	}
	for _, st := range est.Stages {
		for _, sw := range st.Workers {
			if w := rows[sw.Name]; w != nil && st.Model != "" {
				w.Estimated += sw.ItemsPerSec
			}
		}
	}
	busy := map[string]int64{}
	for _, s := range q.Operators {
		if s.Worker < 0 || s.Worker >= len(q.Placement.Workers) || s.OperatorID >= len(q.Placement.Operators) {
			continue
		}
		name := q.Placement.Workers[s.Worker]
		op := q.Placement.Operators[s.OperatorID]
		w := rows[name]
		w.Tier = op.Tier
		if stage(est, op.Stage) != nil {
			w.Staged = true
		}
		busy[name] += s.BusyNs
		if !contains(w.Operators, op.Name) {
			w.Operators = append(w.Operators, op.Name)
		}
		if st := stage(est, op.Stage); st != nil && st.Model != "" && strings.HasPrefix(op.Name, "model ") {
			w.Measured += float64(s.RowsIn) / secs
		}
	}
	for _, name := range q.Placement.Workers {
		w := rows[name]
		w.Busy = float64(busy[name]) / 1e9 / secs
		r.Workers = append(r.Workers, *w)
	}
}

func (r *Report) links(q deploy.QueryInfo, est *deploy.Estimate, o Options, secs float64) {
	pairs := map[[2]string]*LinkRow{}
	get := func(from, to string) *LinkRow {
		k := [2]string{from, to}
		if pairs[k] == nil {
			pairs[k] = &LinkRow{From: from, To: to, PricePerGB: linkPrice(o.Infra, from, to)}
		}
		return pairs[k]
	}
	for _, l := range q.Links {
		if l.Direction != relay.Send || int(l.Link.Edge) >= len(q.Placement.Edges) {
			continue
		}
		e := q.Placement.Edges[l.Link.Edge]
		from, to := q.Placement.Operators[e.From].Tier, q.Placement.Operators[e.To].Tier
		lr := get(from, to)
		lr.Bytes += l.Bytes
		lr.Batches += l.Batches
	}
	for _, l := range est.Links {
		get(l.From, l.To).EstimatedMBps += l.MBps
	}
	for _, lr := range pairs {
		lr.MeasuredMBps = float64(lr.Bytes) / secs / (1 << 20)
		if lr.From != lr.To {
			lr.MeasuredCost = float64(lr.Bytes) / secs * 3600 / gib * lr.PricePerGB
			lr.EstimatedCost = lr.EstimatedMBps * 3600 / 1024 * lr.PricePerGB
		}
		r.Links = append(r.Links, *lr)
	}
	sort.Slice(r.Links, func(i, j int) bool {
		a, b := r.Links[i], r.Links[j]
		return a.From < b.From || a.From == b.From && a.To < b.To
	})
}

func (r *Report) checks(q deploy.QueryInfo, est *deploy.Estimate, o Options, secs float64) {
	// Throughput counts items entering the workflow: the workflow keeps up
	// with its input only as far as it keeps up with its slowest source.
	target, ratio := est.TargetThroughput, math.Inf(1)
	// A table is read once as fast as it goes: it has no rate to keep up
	// with (the plan's one item a second is a placeholder), so it counts
	// in neither the target nor what was achieved, and a query of tables
	// alone has no throughput to judge.
	var planned, measured, read float64
	streams := 0
	for _, s := range r.Sources {
		read += s.Measured
		if s.Bounded {
			continue
		}
		streams++
		planned += s.Planned
		measured += s.Measured
		if s.Planned > 0 {
			ratio = min(ratio, s.Measured/s.Planned)
		}
	}
	if target <= 0 {
		target = planned
	}
	if streams == 0 {
		measured = read // tables alone: how fast they were read, not judged
	}
	achieved := measured
	if !math.IsInf(ratio, 1) && est.TargetThroughput > 0 {
		achieved = target * ratio
	}
	// Only a plan's estimates are judged: a query placed by the default
	// rules has none.
	tpTol, netTol := ThroughputTolerance, NetworkTolerance
	if q.Estimate == nil || target <= 0 {
		tpTol = 0
	}
	if q.Estimate == nil {
		netTol = 0
	}
	r.Checks = append(r.Checks, check("throughput", "items/s", target, achieved, tpTol))

	var netMeas float64
	for _, l := range r.Links {
		netMeas += l.MeasuredCost
	}
	if o.Infra == nil {
		// No prices here: the coordinator's own pricing of the bytes.
		netMeas = q.NetworkCost * 3600 / secs
	}
	netEst := est.NetworkCost
	r.Checks = append(r.Checks, check("network cost", "per hour", netEst, netMeas, netTol))

	// The workers priced as the plan prices them: those that ran its
	// stages (a query placed by rules has none: every worker counts).
	var compMeas float64
	for _, w := range r.Workers {
		if w.Staged || q.Estimate == nil {
			compMeas += w.Price
		}
	}
	compTol := ComputeTolerance
	if q.Estimate == nil {
		compTol = 0
	}
	if o.Infra == nil {
		compMeas = q.ComputeCost / max(q.Ended.Sub(q.Submitted).Hours(), 1e-12)
		compTol = 0 // the coordinator's total holds every worker
	}
	r.Checks = append(r.Checks, check("compute cost", "per hour", est.ComputeCost, compMeas, compTol))

	// The workflow's accuracy is its last model's, measured by that call's
	// label meter where the stream carries labels.
	for i := len(r.Operators) - 1; i >= 0; i-- {
		op := r.Operators[i]
		if !strings.HasPrefix(op.Name, "labels ") || op.Labelled == 0 {
			continue
		}
		acc, unit := float64(op.Correct)/float64(op.Labelled), "fraction"
		if est.Accuracy > 1 {
			acc, unit = 100*acc, "%"
		}
		c := check("accuracy", unit, est.Accuracy, acc, 0)
		c.What = fmt.Sprintf("accuracy (%s, %d labelled rows)", strings.TrimPrefix(op.Name, "labels "), op.Labelled)
		r.Checks = append(r.Checks, c)
		break
	}
}

func check(what, unit string, est, meas, tol float64) Check {
	c := Check{What: what, Unit: unit, Estimated: est, Measured: meas, Tolerance: tol}
	switch {
	case est != 0:
		e := meas/est - 1
		c.Error = &e
	case meas == 0:
		c.Error = new(float64)
	}
	c.OK = tol == 0 || c.Error != nil && math.Abs(*c.Error) <= tol
	return c
}

func stage(est *deploy.Estimate, name string) *deploy.StageEstimate {
	if name == "" {
		return nil
	}
	for i := range est.Stages {
		if est.Stages[i].Name == name {
			return &est.Stages[i]
		}
	}
	return nil
}

func linkPrice(inf *infra.Infra, from, to string) float64 {
	if inf == nil || from == to {
		return 0
	}
	for _, l := range inf.Links {
		if l.From == from && l.To == to || l.From == to && l.To == from {
			return l.CostPerGB
		}
	}
	return 0
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
