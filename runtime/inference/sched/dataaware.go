package sched

import (
	"fmt"
	"math"

	"github.com/tierflow/tierflow/runtime/dataaware"
)

// Names of the SneakPeek policies (`--sched`).
const (
	MaxAccEDFName = "maxacc-edf"
	LOEDFName     = "lo-edf"
	GroupedName   = "grouped"
	SneakPeekName = "sneakpeek"
)

// DataAware runs one of SneakPeek's request schedulers (5, 6.1: MaxAcc-EDF,
// LO-EDF, Grouped, SneakPeek) as the worker's policy: the rows waiting in
// every queue are the problem's requests (deadline: their batch's arrival
// plus the query's LATENCY; evidence: Tenant.Evidence's votes), every
// query is an application whose candidates are its Tenant.Variants (the
// bound session alone without them) at the latency the worker measured,
// and the first batch of the schedule runs now on the variant the
// schedule gave it. The next decision plans again with what arrived
// meanwhile (the paper's scheduling windows, one batch long).
//
// The schedulers are runtime/dataaware's, the same code `tierflow bench
// sneakpeek` measures. One batch runs at a time (the paper's worker), and
// a batch is not split across variants: a variant is chosen for a whole
// batch the first time it is granted. The short-circuit candidate is not
// offered here: the estimator's answer would have to be written in the
// model's output format, which the scheduler does not know.
type DataAware struct {
	Scheduler dataaware.Scheduler
	Penalty   dataaware.Penalty
	// Sizes are the batch sizes each session is measured at when it opens
	// (the latency the schedules are planned with).
	Sizes []int
}

// NewDataAware returns the policy named name with the step penalty.
func NewDataAware(name string) (*DataAware, bool) {
	var s dataaware.Scheduler
	switch name {
	case MaxAccEDFName:
		s = dataaware.MaxAccEDF{}
	case LOEDFName:
		s = dataaware.LOEDF{}
	case GroupedName:
		s = dataaware.Grouped{Threshold: 5}
	case SneakPeekName:
		s = dataaware.Grouped{Threshold: 5, Aware: true}
	default:
		return nil, false
	}
	return &DataAware{Scheduler: s, Penalty: dataaware.Step, Sizes: []int{1, 8, 32}}, true
}

func (p *DataAware) Name() string        { return p.Scheduler.Name() }
func (p *DataAware) Slots() int          { return 1 }
func (p *DataAware) ProfileSizes() []int { return p.Sizes }

// rowRef is a problem request's batch.
type rowRef struct {
	req *Request
	app int
}

// Problem is the scheduling problem of view v, in seconds from v.Now, and
// the batch of every row.
func (p *DataAware) Problem(v *View) (*dataaware.Problem, []rowRef) {
	pr := &dataaware.Problem{}
	var refs []rowRef
	for a, q := range v.Queues {
		app := &dataaware.App{Name: q.Query, Penalty: p.Penalty}
		for _, vr := range q.Variants {
			fixed, per := fit(v.Profiles, vr.Key)
			app.Models = append(app.Models, &dataaware.Model{Name: vr.Name, Accuracy: vr.Accuracy, Recall: vr.Recall, Fixed: fixed, PerItem: per})
		}
		if len(app.Models) == 0 {
			fixed, per := fit(v.Profiles, q.Pending[0].Key)
			app.Models = []*dataaware.Model{{Name: "", Accuracy: 1, Fixed: fixed, PerItem: per}}
		}
		pr.Apps = append(pr.Apps, app)
		for _, r := range q.Pending {
			arr := r.Arrival.Sub(v.Now).Seconds()
			dl := math.Inf(1)
			if !r.Deadline.IsZero() {
				dl = r.Deadline.Sub(v.Now).Seconds()
			}
			for i := r.Total - r.Rows; i < r.Total; i++ {
				var votes []float64
				if i < len(r.Votes) {
					votes = r.Votes[i]
				}
				pr.Requests = append(pr.Requests, &dataaware.Request{App: a, Arrival: arr, Deadline: dl, Votes: votes})
				refs = append(refs, rowRef{req: r, app: a})
			}
		}
	}
	return pr, refs
}

// fit is a session's batch latency as fixed + per row (seconds) from its
// profile; 0, 0 before it is measured (the first run measures it).
func fit(pr *Profiles, key string) (float64, float64) {
	t1, ok := pr.Predict(key, 1)
	if !ok {
		return 0, 0
	}
	t32, _ := pr.Predict(key, 32)
	per := max((t32-t1).Seconds()/31, 0)
	return max(t1.Seconds()-per, 0), per
}

func (p *DataAware) Next(v *View) Decision {
	if len(v.Running) > 0 {
		return Decision{Why: fmt.Sprintf("%s: %s runs", p.Name(), v.Running[0].Query)}
	}
	pr, refs := p.Problem(v)
	if len(pr.Requests) == 0 {
		return Decision{}
	}
	s := p.Scheduler.Schedule(pr)
	if len(s) == 0 || len(s[0].Requests) == 0 {
		return Decision{}
	}
	first := s[0]
	// The batch of the first scheduled row with the earliest deadline.
	run := refs[first.Requests[0]].req
	for _, i := range first.Requests {
		if r := refs[i].req; earlier(r, run) {
			run = r
		}
	}
	m := pr.Apps[first.App].Models[first.Model]
	return Decision{Run: run, Variant: m.Name}
}
