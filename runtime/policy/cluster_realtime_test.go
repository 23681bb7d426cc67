package policy

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/physical"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/inference/sched"
)

// A real-time query is admitted on a worker when its predicted latency
// there, its own batch plus the wait behind the batches of the work that
// does not yield to it, meets its LATENCY, and refused at its PRIORITY
// with the prediction, the worker and the queries otherwise. Best-effort
// work on a worker whose scheduler yields (deepquery) is slowed for it and
// said so, however busy; a best-effort query plans around everything.
func TestRealtimeAdmissionPredictsLatency(t *testing.T) {
	tenMs := func(share float64) sched.QueryStats { // 1000 batches of 10 ms
		return sched.QueryStats{Share: share, Batches: 1000, Busy: 10 * time.Second}
	}
	v := View{Workers: map[string]deploy.WorkerInfo{
		"edge": {Name: "edge", Sched: sched.DeepQueryName}, "hub": {Name: "hub", Sched: sched.NaiveName},
		"mid": {Name: "mid", Sched: sched.NaiveName}},
		Running: []Running{{Query: "q-rt", Priority: "REALTIME",
			Sched: map[string]sched.QueryStats{"hub": tenMs(0.5), "mid": tenMs(0.5)}},
			{Query: "q-be", Priority: "BEST_EFFORT",
				Sched: map[string]sched.QueryStats{"edge": tenMs(0.95), "hub": tenMs(0.45)}}}}
	obj := logical.Objectives{Priority: "REALTIME", LatencyMs: 50, PriorityPos: logical.Pos{File: "q.sql", Line: 2, Col: 10}}
	admitRealtime := func(obj logical.Objectives, p *deploy.Placement, plan *physical.Plan) (string, error) {
		return RealtimeAdmission{}.Admit(Candidate{Query: "new", Objectives: obj}, v, p, plan)
	}

	// edge: 95% busy, but with best-effort work that yields: admitted.
	note, err := admitRealtime(obj, &deploy.Placement{Workers: []string{"edge"}}, nil)
	if err != nil || !strings.Contains(note, "q-be on edge") {
		t.Fatalf("on edge: note %q, err %v; want q-be slowed", note, err)
	}
	// hub: 95% busy with work that does not yield, batches of 10 ms:
	// 10 x 0.95/0.05 = 190 ms of queueing.
	_, err = admitRealtime(obj, &deploy.Placement{Workers: []string{"hub"}}, nil)
	if !errors.Is(err, planner.ErrInfeasible) || !strings.HasPrefix(err.Error(), "q.sql:2:10: ") ||
		!strings.Contains(err.Error(), "predicted latency 190 ms on worker hub > LATENCY 50 ms") ||
		!strings.Contains(err.Error(), "q-be, q-rt, 95% busy") {
		t.Fatalf("on hub: %v; want refused at the PRIORITY with 190 ms predicted against 50 ms, naming q-be and q-rt", err)
	}
	// mid: 50% busy with 10 ms batches, and the query's own batches of 5
	// ms (one row at 200 rows/s): 5 + 10 = 15 ms. Within 50 ms, admitted;
	// within 12 ms, refused: the load is the same, the bound decides.
	plan := &physical.Plan{Operators: []physical.Operator{{Name: "m", Kind: "ml",
		Batch:   &physical.Batching{MaxBatch: 8, MaxDelay: 5 * time.Millisecond},
		Workers: []physical.Worker{{Name: "mid", ItemsPerSec: 20, Capacity: 200}}}}}
	if got := ownBatchMs(plan, "mid"); math.Abs(got-5) > 1e-9 {
		t.Fatalf("own batch on mid: %v ms, want 5", got)
	}
	if _, err := admitRealtime(obj, &deploy.Placement{Workers: []string{"mid"}}, plan); err != nil {
		t.Fatalf("on mid within 50 ms: %v", err)
	}
	tight := obj
	tight.LatencyMs = 12
	if _, err := admitRealtime(tight, &deploy.Placement{Workers: []string{"mid"}}, plan); err == nil ||
		!strings.Contains(err.Error(), "predicted latency 15 ms on worker mid > LATENCY 12 ms") {
		t.Fatalf("on mid within 12 ms: %v; want refused with 15 ms predicted", err)
	}
	if _, err := admitRealtime(logical.Objectives{Priority: "BEST_EFFORT"}, &deploy.Placement{Workers: []string{"hub"}}, nil); err != nil {
		t.Fatalf("a best-effort query refused: %v", err)
	}
	// bench shared's naive baseline: the cluster's policies without the
	// real-time admission.
	naive := Without(Defaults(), RealtimeAdmissionName)
	if _, err := Admit(Clusters(naive), Candidate{Query: "new", Objectives: obj}, v, &deploy.Placement{Workers: []string{"hub"}}, nil); err != nil {
		t.Fatalf("refused without the real-time admission: %v", err)
	}
	if _, err := Admit(Clusters(Defaults()), Candidate{Query: "new", Objectives: obj}, v, &deploy.Placement{Workers: []string{"hub"}}, nil); err == nil {
		t.Fatalf("admitted on hub by the default policies")
	}
	ws := []deploy.Worker{{Name: "edge"}, {Name: "hub"}, {Name: "mid"}}
	be := Reservations{}.Reserve(Candidate{Query: "new"}, v, ws)
	rt := Reservations{}.Reserve(Candidate{Query: "new", Objectives: obj}, v, ws)
	if len(be) != 3 || be[0].Busy != 0.95 || len(rt) != 2 || rt[0].Worker != "hub" {
		t.Fatalf("reserved for best effort %+v, for real time %+v", be, rt)
	}
}

// The prediction grows without bound as the worker saturates.
func TestPredictLatencyQueueing(t *testing.T) {
	for _, c := range []struct {
		l    *load
		own  float64
		want float64
	}{
		{nil, 3, 3},
		{&load{busy: 0.5, batchMs: 4}, 2, 6},
		{&load{busy: 0.9, batchMs: 1}, 1, 10},
		{&load{busy: 0.75}, 2, 8}, // unmeasured batches taken as long as its own
		{&load{busy: 1, batchMs: 1}, 1, math.Inf(1)},
	} {
		if got := predictLatency(c.l, c.own); math.Abs(got-c.want) > 1e-9 && got != c.want {
			t.Errorf("predictLatency(%+v, %v) = %v, want %v", c.l, c.own, got, c.want)
		}
	}
}
