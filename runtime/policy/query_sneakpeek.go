package policy

import (
	"fmt"
	"strings"
	"time"

	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/dataaware"
)

// SneakPeek is the data-aware re-plan policy (dataaware.Policy) on the
// engine: for a query WITH (ACCURACY >= x DATA AWARE) whose model call
// reads a NATS or JetStream stream, it estimates the stream's class mix
// from the rows the stream carries (a tap on its subject: a plain
// subscription that takes nothing from the query; each row weighed by
// Evidence, k nearest neighbours in a training sample) and, when the mix
// has moved past Drift from the one the plan was made for, asks for a plan
// weighed by the live mix (control.Constraints.ClassMix): the variant
// that meets the target on this data, cut over at an epoch.
type SneakPeek struct {
	Evidence dataaware.Evidence
	// Window is the estimator's fading window in rows, MinRows the rows
	// of evidence before the first decision, MinAge how long a new plan
	// settles before it is judged, Drift the total variation distance
	// from the planned mix that asks for a re-plan (0: DefaultSneakPeek's).
	Window  float64
	MinRows int
	MinAge  time.Duration
	Drift   float64
}

// SneakPeekName is the SneakPeek policy's name.
const SneakPeekName = "sneakpeek-replan"

// DefaultSneakPeek's window of 200 rows follows a shift of the mix within
// a second or two of a stream of 200 rows a second; a re-plan needs 150
// rows of evidence and a mix 15% away from the planned one (a mix that
// moves less changes no variant of the examples' zoo), and a plan a second
// to settle (runtime/dataaware's live test).
var DefaultSneakPeek = SneakPeek{Window: 200, MinRows: 150, MinAge: time.Second, Drift: 0.15}

func (SneakPeek) Name() string     { return SneakPeekName }
func (SneakPeek) Cadence() Cadence { return EverySecond }

func (s SneakPeek) Attach(p *Placed) control.Policy {
	if s.Evidence == nil || p.Conn == nil || p.Bound == nil || !p.Bound.Objectives.DataAware {
		return nil
	}
	call := tappable(p.Bound.Root)
	if call == nil {
		return nil
	}
	d := DefaultSneakPeek
	if s.Window > 0 {
		d.Window = s.Window
	}
	if s.MinRows > 0 {
		d.MinRows = s.MinRows
	}
	if s.MinAge > 0 {
		d.MinAge = s.MinAge
	}
	if s.Drift > 0 {
		d.Drift = s.Drift
	}
	est, err := dataaware.NewEstimator(s.Evidence, 0, d.Window)
	if err != nil {
		return nil
	}
	tap, err := dataaware.TapNATS(p.Conn, call.subject, call.column, est, "")
	if err != nil {
		return nil
	}
	return &sneakPeekState{Policy: &dataaware.Policy{Model: call.model, Estimator: est, MinRows: d.MinRows, MinAge: d.MinAge,
		Drift: d.Drift, Base: call.base}, tap: tap}
}

// tapped is a data-aware model call over a stream the policy can tap.
type tapped struct {
	model, subject, column string
	// base is the mix the first plan assumed: the profile's class
	// supports (nil: uniform).
	base map[string]float64
}

// tappable is the first model call over a NATS or JetStream stream's
// tensor column, nil when there is none.
func tappable(root logical.Node) *tapped {
	var out *tapped
	logical.Walk(root, func(n logical.Node) bool {
		lm, ok := n.(*logical.LateralModel)
		if !ok || out != nil || lm.Model == nil || len(lm.Args) == 0 {
			return out == nil
		}
		col, ok := lm.Args[0].(*expr.Column)
		if !ok {
			return true
		}
		logical.Walk(lm.Input, func(x logical.Node) bool {
			sc, ok := x.(*logical.Scan)
			if ok && out == nil && sc.Stream != nil && (strings.EqualFold(sc.Stream.Source, "nats") || strings.EqualFold(sc.Stream.Source, "jetstream")) {
				name := col.Name[strings.LastIndexByte(col.Name, '.')+1:]
				out = &tapped{model: lm.Model.Name, subject: sc.Stream.Subject, column: name}
			}
			return out == nil
		})
		if out != nil {
			for _, v := range lm.Model.Variants {
				if len(v.Classes) == 0 {
					continue
				}
				out.base = map[string]float64{}
				for _, c := range v.Classes {
					out.base[c.Class] = float64(c.Support)
				}
				break
			}
		}
		return out == nil
	})
	return out
}

// sneakPeekState is the policy's own for one query: its estimator fed by a
// tap on the query's stream.
type sneakPeekState struct {
	*dataaware.Policy
	tap *dataaware.Tap
}

// Close stops the tap.
func (s *sneakPeekState) Close() error {
	if err := s.tap.Close(); err != nil {
		return fmt.Errorf("sneakpeek: %w", err)
	}
	return nil
}
