package cluster_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/coordinator"
)

// askEveryTime is a policy that always asks to move the query off every
// worker (no plan can do that) and records when it was asked.
type askEveryTime struct {
	mu    sync.Mutex
	asked []time.Time
}

func (p *askEveryTime) Decide(in control.PolicyInput) *control.Decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, time.Now())
	return &control.Decision{Reason: "test: off every worker", Constraints: control.Constraints{Exclude: in.Registered}}
}

// TestKeptReplanBacksOff: when no other plan is feasible the query keeps
// its plan, and the coordinator does not ask the policy again every second
// (it would only ask for the same): it waits 2 s, then 4 s, ... The result
// is that of a run without the policy.
func TestKeptReplanBacksOff(t *testing.T) {
	t.Parallel() // see "Tests in parallel" (cluster_test.go)
	f := clustertest.NewFixture(t, 1000)
	// 10 s of replay: a policy asked every second would be asked ~9 times.
	script := strings.Replace(clustertest.Query, "FORMAT CSV;", "FORMAT CSV RATE 100 PER SECOND;", 1)
	want, _ := runShaped(t, f, script, nil, nil)
	p := &askEveryTime{}
	got, s := runWith(t, f, script, cluster.Options{Infra: f.Infra, Placement: coordinator.PlaceRules, Policies: clustertest.Replan(p)})
	if got != want {
		t.Fatalf("the result differs:\n%s\nwant:\n%s", got, want)
	}
	if len(s.Replans) != 0 {
		t.Fatalf("replans %+v, want none (no plan is feasible)", s.Replans)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.asked) < 2 {
		t.Fatalf("the policy was asked %d times, want it asked again after a back-off", len(p.asked))
	}
	// Back-offs of 2 s and 4 s: at most 4 asks in 10 s (at 0, 2, 6, and
	// maybe 14 s on a slow machine's longer run), and each gap at least 2 s.
	if len(p.asked) > 4 {
		t.Fatalf("the policy was asked %d times in %v, want it backed off", len(p.asked), p.asked[len(p.asked)-1].Sub(p.asked[0]))
	}
	for i := 1; i < len(p.asked); i++ {
		if gap := p.asked[i].Sub(p.asked[i-1]); gap < 2*time.Second {
			t.Fatalf("asked again after %v, want at least the 2 s back-off", gap)
		}
	}
}
