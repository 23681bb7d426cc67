package coordinator

import (
	"errors"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/inference/sched"
)

// A real-time query is placed around the load of the queries running on a
// worker: best-effort work on a worker whose scheduler yields (deepquery)
// is slowed for it and said so; work that does not yield, past AdmitBusy,
// refuses it at its PRIORITY with the worker, the share and the queries.
// A best-effort query plans around everything.
func TestRealtimeAdmissionWeighsLoad(t *testing.T) {
	c := &Coordinator{queries: map[string]*queryState{}, workers: map[string]*deploy.WorkerInfo{
		"edge": {Name: "edge", Sched: sched.DeepQueryName}, "hub": {Name: "hub", Sched: sched.NaiveName}}}
	c.queries["q-rt"] = &queryState{info: deploy.QueryInfo{Query: "q-rt", Priority: "REALTIME",
		Sched: map[string]sched.QueryStats{"hub": {Share: 0.5}}}}
	c.queries["q-be"] = &queryState{info: deploy.QueryInfo{Query: "q-be", Priority: "BEST_EFFORT",
		Sched: map[string]sched.QueryStats{"edge": {Share: 0.95}, "hub": {Share: 0.45}}}}
	obj := logical.Objectives{Priority: "REALTIME", LatencyMs: 50, PriorityPos: logical.Pos{File: "q.sql", Line: 2, Col: 10}}

	note, err := c.admitRealtime("new", obj, &deploy.Placement{Workers: []string{"edge"}})
	if err != nil || !strings.Contains(note, "q-be on edge") {
		t.Fatalf("on edge: note %q, err %v; want q-be slowed", note, err)
	}
	_, err = c.admitRealtime("new", obj, &deploy.Placement{Workers: []string{"hub"}})
	if !errors.Is(err, planner.ErrInfeasible) || !strings.HasPrefix(err.Error(), "q.sql:2:10: ") ||
		!strings.Contains(err.Error(), "worker hub is 95% busy with q-be, q-rt") {
		t.Fatalf("on hub: %v; want refused at the PRIORITY naming hub, 95%%, q-be and q-rt", err)
	}
	if _, err := c.admitRealtime("new", logical.Objectives{Priority: "BEST_EFFORT"}, &deploy.Placement{Workers: []string{"hub"}}); err != nil {
		t.Fatalf("a best-effort query refused: %v", err)
	}
	c.cfg.AdmitAll = true // bench shared's naive baseline
	if _, err := c.admitRealtime("new", obj, &deploy.Placement{Workers: []string{"hub"}}); err != nil {
		t.Fatalf("refused with AdmitAll: %v", err)
	}
	c.cfg.AdmitAll = false
	ws := []deploy.Worker{{Name: "edge"}, {Name: "hub"}}
	be := c.reserved("new", false, ws)
	rt := c.reserved("new", true, ws)
	if len(be) != 2 || be[0].Busy != 0.95 || len(rt) != 1 || rt[0].Worker != "hub" {
		t.Fatalf("reserved for best effort %+v, for real time %+v", be, rt)
	}
}
