package physical

import "testing"

// Spread shows an operator on the workers the runtime runs it on: equal
// shares of its demand, the capacity the plan had for a worker or for its
// type; never fewer workers than the plan's.
func TestSpreadShowsTheWorkersItRunsOn(t *testing.T) {
	p := &Plan{Operators: []Operator{{Name: "Join", Demand: 30, Workers: []Worker{{Name: "w-1", Type: "core", Tier: "cloud", Share: 1, ItemsPerSec: 30, Capacity: 2e4, Free: 0.5}}}}}
	if p.Spread("Join", []Worker{{Name: "w-1"}}) || p.Spread("Sink", []Worker{{Name: "w-1"}, {Name: "w-2"}}) {
		t.Fatal("spread to as many workers, or an operator the plan lacks")
	}
	if !p.Spread("Join", []Worker{{Name: "w-1", Type: "core", Tier: "cloud"}, {Name: "w-2", Type: "core", Tier: "cloud"}, {Name: "w-3", Type: "big", Tier: "cloud"}}) {
		t.Fatal("not spread over three workers")
	}
	ws := p.Operator("Join").Workers
	if len(ws) != 3 {
		t.Fatalf("%d workers, want 3", len(ws))
	}
	for i, want := range []struct {
		name     string
		capacity float64
		free     float64
	}{{"w-1", 2e4, 0.5}, {"w-2", 2e4, 0}, {"w-3", 0, 0}} {
		w := ws[i]
		if w.Name != want.name || w.Capacity != want.capacity || w.Free != want.free || w.ItemsPerSec != 10 || w.Share != 1.0/3 {
			t.Errorf("worker %d: %+v, want %s with capacity %g free %g, 10 items/s, a third", i, w, want.name, want.capacity, want.free)
		}
	}
}
