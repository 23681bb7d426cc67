package policy

import (
	"errors"
	"slices"
	"testing"

	"github.com/tierflow/tierflow/runtime/inference/sched"
)

// The registry is the one list of policies: names are unique, every
// per-worker entry is a scheduler a worker can run (sched.ByName), every
// per-query and per-cluster one builds and says its scale, and the
// defaults are what a run has unless it leaves them out.
func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range Registry() {
		if seen[e.Name] {
			t.Errorf("%s registered twice", e.Name)
		}
		seen[e.Name] = true
		if e.Doc == "" {
			t.Errorf("%s has no doc line", e.Name)
		}
		switch e.Scale {
		case PerWorker:
			if _, err := sched.ByName(e.Name); err != nil {
				t.Errorf("per-worker %s: %v", e.Name, err)
			}
		case PerQuery, PerCluster:
			if e.New == nil {
				t.Errorf("%s (%s) cannot be built", e.Name, e.Scale)
				continue
			}
			p, err := e.New(Settings{Evidence: stubEvidence{}})
			if err != nil {
				t.Errorf("%s: %v", e.Name, err)
				continue
			}
			if p.Name() != e.Name || p.Cadence().Scale != e.Scale {
				t.Errorf("%s builds %s at %s", e.Name, p.Name(), p.Cadence())
			}
			_, isQuery := p.(Query)
			_, isCluster := p.(Cluster)
			if isQuery != (e.Scale == PerQuery) || isCluster != (e.Scale == PerCluster) {
				t.Errorf("%s (%s) implements Query %v, Cluster %v", e.Name, e.Scale, isQuery, isCluster)
			}
		}
	}
	var names []string
	for _, p := range Defaults() {
		names = append(names, p.Name())
	}
	if want := []string{JellyfishName, ReservationsName, RealtimeAdmissionName}; !slices.Equal(names, want) {
		t.Errorf("defaults %v, want %v", names, want)
	}
}

// A run that names a policy it cannot have is told which and why.
func TestBuildRefuses(t *testing.T) {
	if _, err := Build([]string{"no-such"}, Settings{}); !errors.Is(err, ErrPolicy) {
		t.Errorf("unknown policy: %v", err)
	}
	if _, err := Build([]string{SneakPeekName}, Settings{}); !errors.Is(err, ErrPolicy) {
		t.Errorf("sneakpeek without evidence: %v", err)
	}
	if _, err := Build([]string{"adapt-sides"}, Settings{}); !errors.Is(err, ErrPolicy) {
		t.Errorf("a per-batch policy by name: %v", err)
	}
	ps, err := Build([]string{DriftName, JellyfishName, SlowLinkName}, Settings{DriftFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, p := range ps {
		order = append(order, p.Name())
	}
	if want := []string{JellyfishName, SlowLinkName, DriftName}; !slices.Equal(order, want) {
		t.Errorf("built %v, want registry order %v", order, want)
	}
}

// stubEvidence stands for a run's evidence where only its presence counts.
type stubEvidence struct{}

func (stubEvidence) Classes() []string         { return []string{"a"} }
func (stubEvidence) Dim() int                  { return 1 }
func (stubEvidence) Votes([]float32) []float64 { return []float64{1} }
