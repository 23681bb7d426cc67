package policy

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/optimize"
	"github.com/tierflow/tierflow/planner/physical"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/inference/sched"
)

// AdmitBusy is the most of a worker's time that work a real-time query
// cannot push aside may take for a real-time query without a LATENCY to be
// placed on it (one with a LATENCY is held to it: predictLatency).
const AdmitBusy = 0.9

// load is one worker's busy share, who holds it, and how long their model
// batches take there.
type load struct {
	busy float64
	by   []string
	// batchMs is the mean model batch time of the queries measured on the
	// worker, weighted by their busy share (0: none measured yet).
	batchMs  float64
	measured float64 // the busy share batchMs is the mean over
}

// loadsOf is, per worker, the busy share the queries still deploying or
// running hold (v.Running): per query the larger of what its plan
// reserved (physical.Reservations) and what the worker's inference
// scheduler measured (Running.Sched). For a real-time query (rt),
// best-effort queries on a worker whose scheduler yields to real-time work
// are left out: they are slowed, not in the way; slowed lists them.
func loadsOf(v View, rt bool) (map[string]*load, []string) {
	out := map[string]*load{}
	slowedSet := map[string]bool{}
	for _, q := range v.Running {
		share := map[string]float64{}
		if q.Plan != nil {
			for _, r := range physical.Reservations(map[string]*physical.Plan{q.Query: q.Plan}) {
				share[r.Worker] = r.Busy
			}
		}
		for w, st := range q.Sched {
			share[w] = max(share[w], st.Share)
		}
		for w, b := range share {
			wi, ok := v.Workers[w]
			if !ok || b <= 0 {
				continue // a worker gone since holds nothing
			}
			if rt && q.Priority == string(lang.PriorityBestEffort) && wi.Sched == sched.DeepQueryName {
				slowedSet[fmt.Sprintf("%s on %s", q.Query, w)] = true
				continue
			}
			l := out[w]
			if l == nil {
				l = &load{}
				out[w] = l
			}
			l.busy += b
			l.by = append(l.by, q.Query)
			if st, ok := q.Sched[w]; ok && st.Batches > 0 && st.Share > 0 {
				ms := float64(st.Busy) / float64(st.Batches) / 1e6
				l.batchMs = (l.batchMs*l.measured + ms*st.Share) / (l.measured + st.Share)
				l.measured += st.Share
			}
		}
	}
	for _, l := range out {
		sort.Strings(l.by)
	}
	return out, slices.Sorted(maps.Keys(slowedSet))
}

// predictLatency is a real-time query's predicted latency on a worker with
// load l (what does not yield to it), ms: its own model batch (ownMs) plus
// the time it queues behind the others' batches. The worker is a queue
// whose server is busy l.busy of the time with batches of l.batchMs; a
// batch arriving at random waits busy/(1-busy) of those on average (M/M/1),
// so a worker 50% busy delays it one batch and one 90% busy nine; at 100%
// the queue grows without bound. Batches not measured yet are taken as
// long as the query's own.
func predictLatency(l *load, ownMs float64) float64 {
	if l == nil || l.busy <= 0 {
		return ownMs
	}
	if l.busy >= 1 {
		return math.Inf(1)
	}
	batch := l.batchMs
	if batch <= 0 {
		batch = ownMs
	}
	return ownMs + batch*l.busy/(1-l.busy)
}

// ownBatchMs is what one model batch of the plan's ML operators takes on
// worker w, ms, the longest of them: the rows one batch collects (the
// operator's rate there over its batching delay, at least 1, at most its
// batch size) at the worker's capacity for the chosen variant. 0 without
// a plan or an ML operator on w.
func ownBatchMs(plan *physical.Plan, w string) float64 {
	if plan == nil {
		return 0
	}
	worst := 0.0
	for _, op := range plan.Operators {
		if op.Kind != "ml" {
			continue
		}
		for _, x := range op.Workers {
			if x.Name != w || x.Capacity <= 0 {
				continue
			}
			rows := 1.0
			if op.Batch != nil {
				rows = max(1, math.Ceil(x.ItemsPerSec*op.Batch.MaxDelay.Seconds()))
				if op.Batch.MaxBatch > 0 {
					rows = min(rows, float64(op.Batch.MaxBatch))
				}
			}
			worst = max(worst, rows/x.Capacity*1000)
		}
	}
	return worst
}

// RealtimeAdmission is DeepQuery's admission of real-time queries: a
// query WITH (PRIORITY REALTIME) is refused where the work it cannot push
// aside would make it miss its LATENCY (Admit). Without it every query is
// placed wherever the planner puts it (`bench shared`'s naive baseline).
type RealtimeAdmission struct{}

// RealtimeAdmissionName is its name.
const RealtimeAdmissionName = "realtime-admission"

func (RealtimeAdmission) Name() string     { return RealtimeAdmissionName }
func (RealtimeAdmission) Cadence() Cadence { return Cadence{Scale: PerCluster} }

// Reserve leaves the reservations to Reservations.
func (RealtimeAdmission) Reserve(Candidate, View, []deploy.Worker) []optimize.Reservation { return nil }

// admitRealtime refuses a real-time query placed on a worker where, on the
// load of the work it cannot push aside (other real-time queries;
// best-effort ones on a worker whose scheduler does not yield), its
// predicted latency (predictLatency, its own batches from plan, nil in a
// default placement) exceeds its LATENCY, naming the worker, the
// prediction, the share and the queries. Best-effort queries on a worker
// that yields to real-time work do not count: they are slowed, which the
// note of a query it admits says.
func (RealtimeAdmission) Admit(q Candidate, v View, p *deploy.Placement, plan *physical.Plan) (string, error) {
	obj := q.Objectives
	if obj.Priority != string(lang.PriorityRealtime) {
		return "", nil
	}
	ls, slowed := loadsOf(v, true)
	at := ""
	if obj.PriorityPos.Line > 0 {
		at = obj.PriorityPos.String() + ": "
	}
	for _, w := range p.Workers {
		l := ls[w]
		if l == nil {
			continue
		}
		if obj.LatencyMs <= 0 {
			if l.busy >= AdmitBusy {
				return "", fmt.Errorf("%s%w: PRIORITY REALTIME cannot be met on the present load: worker %s is %.0f%% busy with %s, which does not yield to real-time work (at most %.0f%%)",
					at, planner.ErrInfeasible, w, 100*l.busy, strings.Join(l.by, ", "), 100*AdmitBusy)
			}
			continue
		}
		own := ownBatchMs(plan, w)
		if pred := predictLatency(l, own); pred > obj.LatencyMs {
			return "", fmt.Errorf("%s%w: PRIORITY REALTIME cannot be met on the present load: predicted latency %s on worker %s > LATENCY %g ms (its batches %.3g ms, queued behind %s, %.0f%% busy in batches of %.3g ms, which does not yield to real-time work)",
				at, planner.ErrInfeasible, msText(pred), w, obj.LatencyMs, own, strings.Join(l.by, ", "), 100*l.busy, l.batchMs)
		}
	}
	if len(slowed) == 0 {
		return "", nil
	}
	return "best-effort work slowed for it: " + strings.Join(slowed, ", "), nil
}

// msText is a predicted latency for a message.
func msText(ms float64) string {
	if math.IsInf(ms, 1) {
		return "unbounded (the worker is saturated)"
	}
	return fmt.Sprintf("%.3g ms", ms)
}
