package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tierflow/tierflow/planner/optimize"
	"github.com/tierflow/tierflow/planner/physical"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/dataaware"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/inference/sched"
)

// ErrPolicy: a run named a policy that is not registered, or one it
// cannot build.
var ErrPolicy = errors.New("policy")

// Settings are what a run gives the policies it builds (Entry.New): the
// few inputs that are the run's, not any one policy's.
type Settings struct {
	// DriftFactor is the drift policy's factor (`run --replan-drift`;
	// 0: control.DefaultDrift's).
	DriftFactor float64
	// Evidence is what a row's class is estimated from (`run
	// --evidence`; nil: none).
	Evidence dataaware.Evidence
}

// Entry is a registered policy.
type Entry struct {
	Name  string
	Scale Scale
	// Default: a run has it unless it leaves it out.
	Default bool
	// Doc is what it does, in a line.
	Doc string
	// New builds it for a run. Nil for the per-batch policies, which the
	// operators run as the script sets them, and the per-worker ones,
	// which a worker runs as its --sched names (sched.ByName).
	New func(Settings) (Policy, error)
}

// Registry is every policy tierflow has, by time scale: the one list a new
// policy is added to (docs/architecture.md, "Adding a policy").
func Registry() []Entry {
	return []Entry{
		// Per batch: inside a query's operators.
		{Name: "adapt-sides", Scale: PerBatch, Doc: "each batch's input size from the link it crosses, within the LATENCY bound (operators/ml Adapt.WithSides; off with SET planner.adapt_inputs = 'off')"},
		{Name: "lazy-drop", Scale: PerBatch, Doc: "rows past their deadline are dropped before they cross a link or reach compute (operators/ml adapt step, runtime/inference)"},
		// Per worker: the worker's inference scheduler (sched.Policy).
		{Name: sched.NaiveName, Scale: PerWorker, Default: true, Doc: "batches in arrival order (the default --sched)"},
		{Name: sched.DeepQueryName, Scale: PerWorker, Doc: "real-time batches first, best-effort ones in the predicted gaps (DeepQuery)"},
		{Name: sched.MaxAccEDFName, Scale: PerWorker, Doc: "earliest deadline first on the most accurate variant (SneakPeek baseline)"},
		{Name: sched.LOEDFName, Scale: PerWorker, Doc: "earliest deadline first on the least-overhead variant (SneakPeek baseline)"},
		{Name: sched.GroupedName, Scale: PerWorker, Doc: "requests grouped by variant (SneakPeek baseline)"},
		{Name: sched.SneakPeekName, Scale: PerWorker, Doc: "SneakPeek's grouped utility over each row's estimated class"},
		// Per query: re-plan policies, asked by a query's supervisor.
		{Name: JellyfishName, Scale: PerQuery, Default: true, Doc: "a LATENCY query's variant and input size from its sources' links (--no-slo-policy leaves it out)",
			New: func(Settings) (Policy, error) { return Jellyfish{}, nil }},
		{Name: SlowLinkName, Scale: PerQuery, Doc: "a query off a relay link that stalls its sender (--replan)",
			New: func(Settings) (Policy, error) { return Rule(SlowLinkName, EverySecond, control.DefaultSlowLink), nil }},
		{Name: DriftName, Scale: PerQuery, Doc: "re-plan with live numbers that drift from the plan's (--replan, --replan-drift)",
			New: func(s Settings) (Policy, error) {
				d := control.DefaultDrift
				if s.DriftFactor > 0 {
					d.Factor = s.DriftFactor
				}
				return Rule(DriftName, EverySecond, d), nil
			}},
		{Name: SneakPeekName, Scale: PerQuery, Doc: "a DATA AWARE query's variant from its stream's estimated class mix (--replan-data-aware, with --evidence)",
			New: func(s Settings) (Policy, error) {
				if s.Evidence == nil {
					return nil, fmt.Errorf("%w: %s needs evidence of each row's class (--evidence)", ErrPolicy, SneakPeekName)
				}
				p := DefaultSneakPeek
				p.Evidence = s.Evidence
				return p, nil
			}},
		// Per cluster: asked at every placement.
		{Name: ReservationsName, Scale: PerCluster, Default: true, Doc: "a query planned around the capacity the running queries hold",
			New: func(Settings) (Policy, error) { return Reservations{}, nil }},
		{Name: RealtimeAdmissionName, Scale: PerCluster, Default: true, Doc: "a PRIORITY REALTIME query refused where it would miss its LATENCY (DeepQuery)",
			New: func(Settings) (Policy, error) { return RealtimeAdmission{}, nil }},
	}
}

// Names of the per-query rules registered with Rule.
const (
	SlowLinkName = "slow-link"
	DriftName    = "drift"
)

// Build builds the named policies for a run, in registry order (which is
// the order they are asked in, and whose decision wins a conflict).
func Build(names []string, s Settings) ([]Policy, error) {
	reg := Registry()
	for _, n := range names {
		i := slices.IndexFunc(reg, func(e Entry) bool { return e.Name == n })
		if i < 0 {
			return nil, fmt.Errorf("%w: unknown policy %q (want one of %s)", ErrPolicy, n, strings.Join(Buildable(), ", "))
		}
		if reg[i].New == nil {
			return nil, fmt.Errorf("%w: %s is a %s policy, not chosen by name here", ErrPolicy, n, reg[i].Scale)
		}
	}
	var out []Policy
	for _, e := range reg {
		if e.New == nil || !slices.Contains(names, e.Name) {
			continue
		}
		p, err := e.New(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Buildable names the policies a run can choose by name (Build).
func Buildable() []string {
	var out []string
	for _, e := range Registry() {
		if e.New != nil {
			out = append(out, e.Name)
		}
	}
	return out
}

// DefaultNames are the policies a run builds unless it leaves them out
// (the per-worker default is the worker's own: --sched).
func DefaultNames() []string {
	var out []string
	for _, e := range Registry() {
		if e.Default && e.New != nil {
			out = append(out, e.Name)
		}
	}
	return out
}

// Defaults are the default policies, built with no settings.
func Defaults() []Policy {
	ps, err := Build(DefaultNames(), Settings{})
	if err != nil {
		panic(err) // the defaults need no settings: a registry bug
	}
	return ps
}

// Without is ps less the policies named names.
func Without(ps []Policy, names ...string) []Policy {
	var out []Policy
	for _, p := range ps {
		if !slices.Contains(names, p.Name()) {
			out = append(out, p)
		}
	}
	return out
}

// With is ps with p in place of the policy of its name, or added.
func With(ps []Policy, p Policy) []Policy {
	out := slices.Clone(ps)
	if i := slices.IndexFunc(out, func(x Policy) bool { return x.Name() == p.Name() }); i >= 0 {
		out[i] = p
		return out
	}
	return append(out, p)
}

// Queries are the per-query policies of ps, in order.
func Queries(ps []Policy) []Query {
	var out []Query
	for _, p := range ps {
		if q, ok := p.(Query); ok {
			out = append(out, q)
		}
	}
	return out
}

// Clusters are the per-cluster policies of ps, in order.
func Clusters(ps []Policy) []Cluster {
	var out []Cluster
	for _, p := range ps {
		if c, ok := p.(Cluster); ok {
			out = append(out, c)
		}
	}
	return out
}

// Reserve is the capacity every per-cluster policy of cs says q's plan
// must leave the running queries.
func Reserve(cs []Cluster, q Candidate, v View, ws []deploy.Worker) []optimize.Reservation {
	var out []optimize.Reservation
	for _, c := range cs {
		out = append(out, c.Reserve(q, v, ws)...)
	}
	return out
}

// Admit asks every per-cluster policy of cs whether q may run as placed:
// the first refusal, or the notes of those that admitted it.
func Admit(cs []Cluster, q Candidate, v View, p *deploy.Placement, plan *physical.Plan) (string, error) {
	var notes []string
	for _, c := range cs {
		note, err := c.Admit(q, v, p, plan)
		if err != nil {
			return "", err
		}
		if note != "" {
			notes = append(notes, note)
		}
	}
	return strings.Join(notes, "; "), nil
}
