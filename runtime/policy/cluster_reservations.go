package policy

import (
	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/optimize"
	"github.com/tierflow/tierflow/planner/physical"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// Reservations has a query planned around the capacity the other queries
// still deploying or running hold on the registered workers (loadsOf): the
// optimizer gives the new query only the rest. A real-time query does not
// count the best-effort work that yields to it.
type Reservations struct{}

// ReservationsName is its name.
const ReservationsName = "reservations"

func (Reservations) Name() string     { return ReservationsName }
func (Reservations) Cadence() Cadence { return Cadence{Scale: PerCluster} }

func (Reservations) Reserve(q Candidate, v View, ws []deploy.Worker) []optimize.Reservation {
	ls, _ := loadsOf(v, q.Objectives.Priority == string(lang.PriorityRealtime))
	var out []optimize.Reservation
	for _, w := range ws {
		if l := ls[w.Name]; l != nil {
			out = append(out, optimize.Reservation{Worker: w.Name, Busy: l.busy, By: l.by})
		}
	}
	return out
}

// Admit admits every placement: what is left is the planner's to judge.
func (Reservations) Admit(Candidate, View, *deploy.Placement, *physical.Plan) (string, error) {
	return "", nil
}
