package optimize

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// reserve takes the capacity running queries hold off every worker's
// capacities: a worker Busy b keeps (1-b) of its items/s for every variant,
// none at b >= 1. Its price is unchanged: the model prices machines, and a
// plan that puts an operator on a shared machine still counts the whole of
// it (conservative: the machine is paid once, by whichever query). So a
// plan avoids workers that are busy when free ones do the same work, and
// shares them, with what is left, when that is cheaper than the alternative.
func (in *instance) reserve(rs []Reservation) error {
	var errs []string
	seen := map[int]bool{}
	for i, r := range rs {
		w, ok := in.ix.workers[r.Worker]
		switch {
		case !ok:
			errs = append(errs, fmt.Sprintf("reserved[%d]: unknown worker %q", i, r.Worker))
			continue
		case math.IsNaN(r.Busy) || r.Busy < 0:
			errs = append(errs, fmt.Sprintf("reserved[%d]: worker %s busy %v: want a share >= 0", i, r.Worker, r.Busy))
			continue
		case seen[w]:
			errs = append(errs, fmt.Sprintf("reserved[%d]: worker %s listed twice", i, r.Worker))
			continue
		}
		seen[w] = true
		left := max(0, 1-r.Busy)
		if left < eps {
			left = 0
		}
		if in.left == nil {
			in.left = make([]float64, in.nW)
			for x := range in.left {
				in.left[x] = 1
			}
		}
		in.left[w] = left
		for o := range in.caps {
			for v := range in.caps[o] {
				in.caps[o][v][w] *= left
			}
		}
	}
	if len(errs) > 0 {
		return problemErr("%s", strings.Join(errs, "; "))
	}
	return nil
}

// unreserve reports a worker's full capacity with the share left to the
// plan, so that busy shares (ReservationsOf) add up over queries.
func (in *instance) unreserve(ws *WorkerShare, w int) {
	if in.left == nil || in.left[w] >= 1 {
		return
	}
	ws.Free = in.left[w]
	if in.left[w] > 0 {
		ws.Capacity /= in.left[w]
	}
}

// reservedNote says, for a reason, which workers running queries hold; ""
// when none.
func reservedNote(rs []Reservation) string {
	if len(rs) == 0 {
		return ""
	}
	rs = append([]Reservation(nil), rs...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Worker < rs[j].Worker })
	var parts []string
	for _, r := range rs {
		if r.Busy <= 0 {
			continue
		}
		s := fmt.Sprintf("%s %.0f%%", r.Worker, 100*min(r.Busy, 1))
		if len(r.By) > 0 {
			s += " by " + strings.Join(r.By, ",")
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return ""
	}
	return "running queries hold capacity on " + strings.Join(parts, ", ")
}

// ReservationsOf is the capacity the plans of running queries (by query id)
// hold: per worker, the sum over the operators it serves of items/s over
// capacity, the busy share Problem.Reserved takes.
func ReservationsOf(running map[string]*Plan) []Reservation {
	byWorker := map[string]*Reservation{}
	ids := make([]string, 0, len(running))
	for id := range running {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		pl := running[id]
		if pl == nil || !pl.Feasible {
			continue
		}
		for _, op := range pl.Operators {
			for _, w := range op.Workers {
				if w.Capacity <= 0 || w.ItemsPerSec <= 0 {
					continue
				}
				r := byWorker[w.Name]
				if r == nil {
					r = &Reservation{Worker: w.Name}
					byWorker[w.Name] = r
				}
				r.Busy += w.ItemsPerSec / w.Capacity
				if len(r.By) == 0 || r.By[len(r.By)-1] != id {
					r.By = append(r.By, id)
				}
			}
		}
	}
	out := make([]Reservation, 0, len(byWorker))
	for _, r := range byWorker {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Worker < out[j].Worker })
	return out
}
