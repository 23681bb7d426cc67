package policy

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/optimize"
	"github.com/tierflow/tierflow/planner/physical"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/inference/sched"
)

// Scale is the time scale a policy acts at.
type Scale int

const (
	// PerBatch policies run inside a query's operators, at every batch.
	PerBatch Scale = iota
	// PerWorker policies are a worker's inference scheduler, shared by
	// every query on the worker, at every model batch it dispatches.
	PerWorker
	// PerQuery policies are asked by a query's supervisor, at its status
	// reports, whether to re-plan it.
	PerQuery
	// PerCluster policies are asked by the coordinator at every placement
	// of a query, about the others: what they hold, whether it fits.
	PerCluster
)

func (s Scale) String() string {
	return [...]string{"per batch", "per worker", "per query", "per cluster"}[s]
}

// Cadence is when a policy is asked.
type Cadence struct {
	Scale Scale
	// EveryReport: a per-query policy asked at every status report of
	// its query (about twice a second per worker); else at most once a
	// Period.
	EveryReport bool
	Period      time.Duration
}

func (c Cadence) String() string {
	switch {
	case c.EveryReport:
		return c.Scale.String() + ", at every status report"
	case c.Period > 0:
		return fmt.Sprintf("%s, at most every %s", c.Scale, c.Period)
	case c.Scale == PerCluster:
		return c.Scale.String() + ", at every placement"
	case c.Scale == PerWorker:
		return c.Scale.String() + ", at every model batch"
	}
	return c.Scale.String() + ", at every batch"
}

// EverySecond is the cadence of the per-query policies that judge a
// query's smoothed estimates (they move within a few reports).
var EverySecond = Cadence{Scale: PerQuery, Period: time.Second}

// Policy is any policy: what it is called (the name it is registered and
// chosen by) and when it is asked.
type Policy interface {
	Name() string
	Cadence() Cadence
}

// Query is a per-query policy: a re-plan policy. The supervisor attaches
// it to every query at the query's placement and asks its state about the
// running query at its cadence (never while the query changes generation);
// a Decision's Constraints go into the next plan, which the query is cut
// over to at the committed epoch.
type Query interface {
	Policy
	// Attach builds the policy's own state for a query, as placed (nil:
	// nothing to do for it; asked again at the query's next placement).
	// The state is the decision rule the supervisor asks; it may also be a
	// Replaced, an Observer and an io.Closer.
	Attach(p *Placed) control.Policy
}

// Replaced is a per-query state told of every later placement of its
// query (a new generation; or, Placed.Kept, a plan made with live numbers
// that the query kept).
type Replaced interface {
	Placed(p *Placed)
}

// FirstPlanner is a per-query state with a say in its query's first plan:
// what it would ask for at the query's first report, from what the
// placement alone tells it (nil: nothing). The supervisor places the
// query again under it before anything is deployed, so a decision that
// needs no live number costs no cut-over (a cut-over pauses the query's
// streams for a few hundred milliseconds: frames a latency bound misses).
type FirstPlanner interface {
	FirstPlan() *control.Decision
}

// Observer is a per-query state that keeps its own record in the query's
// info at every status report while the query runs (also while it changes
// generation), before any policy decides.
type Observer interface {
	Observe(now time.Time, info *deploy.QueryInfo)
}

// Placed is a query as placed: what a per-query policy builds its state
// from.
type Placed struct {
	Query string
	// Bound is the query as written, bound to its catalog; Root the plan
	// its workers run (the optimizer's rewritten plan, or Bound's root
	// when placed by rules). Both nil for a query learned back from its
	// workers after a coordinator restart, until it is placed again.
	Bound *logical.Plan
	Root  logical.Node
	// Workers are the registered workers it was placed among, Placement
	// where its operators run, and Plan the optimizer's plan (nil: placed
	// by rules).
	Workers   []deploy.Worker
	Placement *deploy.Placement
	Plan      *physical.Plan
	// Variants are the variants its model calls run, by call; Settings
	// the script's SET planner.* values the optimizer planned with (nil
	// when placed by rules).
	Variants map[string]string
	Settings map[string]string
	// Kept: a re-plan made Plan with live numbers and kept the running
	// plan (it was the same).
	Kept bool
	// Conn is the coordinator's NATS connection: a policy may watch the
	// query's streams with it (a plain subscription takes nothing from
	// the query).
	Conn *nats.Conn
}

// Cluster is a per-cluster policy: at every placement of a query (its
// submission, a re-plan, a recovery), what the other queries hold that its
// plan must leave them, and whether it may run where it was placed.
type Cluster interface {
	Policy
	// Reserve is the capacity of the workers ws that the running queries
	// hold and q's plan must leave them (control.Constraints.Reserved).
	Reserve(q Candidate, v View, ws []deploy.Worker) []optimize.Reservation
	// Admit is asked once q is placed (plan: the optimizer's, nil when
	// placed by rules): an error refuses q; note says what admitting it
	// does to the others ("" for nothing).
	Admit(q Candidate, v View, p *deploy.Placement, plan *physical.Plan) (note string, err error)
}

// Candidate is a query being placed.
type Candidate struct {
	Query      string
	Objectives logical.Objectives
}

// View is the cluster as the coordinator sees it at a placement: the
// registered workers by name, and every other query that deploys or
// runs.
type View struct {
	Workers map[string]deploy.WorkerInfo
	Running []Running
}

// Running is a query that deploys or runs: its priority, the plan it was
// placed by (nil: by rules) and what each worker's inference scheduler
// measured of it.
type Running struct {
	Query    string
	Priority string
	Plan     *physical.Plan
	Sched    map[string]sched.QueryStats
}
