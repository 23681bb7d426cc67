package control

import (
	"fmt"
	"time"
)

// Policy decides, from a running query's live estimates, whether it should
// be re-planned. The coordinator asks it about every running query at most
// once a second (a LATENCY query's SLO policy at every status report; never
// while a re-deployment is under way); a Decision
// re-runs the planner without the workers it excludes and with the live
// numbers it carries, and cuts the query over
// to the new plan at an epoch boundary (the committed epoch: the new parts
// rebuild their state by replaying the streams to it, and the client
// writes each epoch once, so no row is lost or duplicated). Later policies
// (latency SLOs, data-aware model choice, sharing workers) plug in here.
type Policy interface {
	Decide(in PolicyInput) *Decision
}

// PolicyInput is what a Policy sees of one running query.
type PolicyInput struct {
	Query string
	// Workers run the current plan; Registered are all the workers the
	// coordinator knows (a new plan can only use those).
	Workers, Registered []string
	// Age is how long the current plan has run; Replans how many times a
	// policy re-planned the query before (0: the plan is the submitted
	// one, made without live numbers).
	Age       time.Duration
	Replans   int
	Estimates Estimates
	// Assumed is what the current plan assumed of the numbers Estimates
	// measure (nil: the query was placed by rules, not planned).
	Assumed *Assumed
	// Latency, for a query WITH (LATENCY <= x) with model calls, is its
	// bound and each call's zoo (the Jellyfish policy's inputs); nil
	// otherwise.
	Latency *LatencyInput
}

// Decision asks for a new plan, for Reason (it goes into the plan
// history), under its Constraints, whichever policy decided. The
// coordinator cuts over only when the new plan differs from the running
// one.
type Decision struct {
	Reason string
	Constraints
}

// SlowLink re-plans a query off a relay link that does not keep up: when a
// link's sender has waited more than MaxStalled of the time (smoothed; the
// plan assumed the link carries what it is given, a stalled share near 0),
// the link's receiving worker is left out of the new plan, so the data
// takes another path. MinAge lets a new plan settle (its first seconds
// replay state) before it is judged.
type SlowLink struct {
	MaxStalled float64
	MinAge     time.Duration
}

// DefaultSlowLink is the policy of `--replan`.
var DefaultSlowLink = SlowLink{MaxStalled: 0.5, MinAge: 2 * time.Second}

func (p SlowLink) Decide(in PolicyInput) *Decision {
	if in.Age < p.MinAge || in.Estimates.Samples < 2 {
		return nil
	}
	for _, l := range in.Estimates.Links {
		if l.Stalled <= p.MaxStalled || l.To == "" || l.From == l.To {
			continue
		}
		// Only move when another worker can take the receiver's part.
		if len(in.Registered) < 2 {
			return nil
		}
		return &Decision{Constraints: Constraints{Exclude: []string{l.To}},
			Reason: fmt.Sprintf("link %s->%s stalled %.0f%% of the time (threshold %.0f%%)", l.From, l.To, 100*l.Stalled, 100*p.MaxStalled)}
	}
	return nil
}
