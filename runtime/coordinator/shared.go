package coordinator

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/optimize"
	"github.com/tierflow/tierflow/planner/physical"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/inference/sched"
)

// AdmitBusy is the most of a worker's time that work a real-time query
// cannot push aside (other real-time queries; best-effort ones on a worker
// whose scheduler does not yield) may take for the query to be placed on
// it: past it, the query's batches queue behind that work and its LATENCY
// is not met (a queue at 90% load waits nine service times on average).
const AdmitBusy = 0.9

// load is one worker's busy share and who holds it.
type load struct {
	busy float64
	by   []string
}

// loads is, per worker, the busy share the queries still deploying or
// running hold: per query the larger of what its plan reserved
// (physical.Reservations) and what the worker's inference scheduler
// measured (QueryInfo.Sched). For a real-time query (rt), best-effort
// queries on a worker whose scheduler yields to real-time work are left
// out: they are slowed, not in the way; slowed lists them.
func (c *Coordinator) loads(self string, rt bool) (map[string]*load, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]*load{}
	slowedSet := map[string]bool{}
	for id, qs := range c.queries {
		if id == self || !qs.info.Ended.IsZero() {
			continue
		}
		share := map[string]float64{}
		if qs.plan != nil {
			for _, r := range physical.Reservations(map[string]*physical.Plan{id: qs.plan}) {
				share[r.Worker] = r.Busy
			}
		}
		for w, s := range qs.info.Sched {
			share[w] = max(share[w], s.Share)
		}
		for w, b := range share {
			wi := c.workers[w]
			if wi == nil || b <= 0 {
				continue // a worker gone since holds nothing
			}
			if rt && qs.info.Priority == string(logicalBestEffort) && wi.Sched == sched.DeepQueryName {
				slowedSet[fmt.Sprintf("%s on %s", id, w)] = true
				continue
			}
			l := out[w]
			if l == nil {
				l = &load{}
				out[w] = l
			}
			l.busy += b
			l.by = append(l.by, id)
		}
	}
	for _, l := range out {
		sort.Strings(l.by)
	}
	return out, slices.Sorted(maps.Keys(slowedSet))
}

// logicalBestEffort is the binder's class name (lang.PriorityBestEffort).
const logicalBestEffort = "BEST_EFFORT"

// reserved is the live view of the capacity that the other queries still
// deploying or running hold on the registered workers ws (loads), as the
// optimizer takes it: the planner gives the new query only the rest.
func (c *Coordinator) reserved(self string, rt bool, ws []deploy.Worker) []optimize.Reservation {
	ls, _ := c.loads(self, rt)
	var out []optimize.Reservation
	for _, w := range ws {
		if l := ls[w.Name]; l != nil {
			out = append(out, optimize.Reservation{Worker: w.Name, Busy: l.busy, By: l.by})
		}
	}
	return out
}

// admitRealtime refuses a real-time query placed on a worker that the work it
// cannot push aside keeps AdmitBusy or more busy, naming the worker, the
// share and the queries; best-effort queries that will yield to it are
// said in the note of a query it admits.
func (c *Coordinator) admitRealtime(self string, obj logical.Objectives, p *deploy.Placement) (string, error) {
	if obj.Priority != "REALTIME" || c.cfg.AdmitAll {
		return "", nil
	}
	ls, slowed := c.loads(self, true)
	for _, w := range p.Workers {
		l := ls[w]
		if l == nil || l.busy < AdmitBusy {
			continue
		}
		at := ""
		if obj.PriorityPos.Line > 0 {
			at = obj.PriorityPos.String() + ": "
		}
		return "", fmt.Errorf("%s%w: PRIORITY REALTIME with LATENCY <= %g ms cannot be met on the present load: worker %s is %.0f%% busy with %s, which does not yield to real-time work (at most %.0f%%)",
			at, planner.ErrInfeasible, obj.LatencyMs, w, 100*l.busy, strings.Join(l.by, ", "), 100*AdmitBusy)
	}
	if len(slowed) == 0 {
		return "", nil
	}
	return "best-effort work slowed for it: " + strings.Join(slowed, ", "), nil
}
