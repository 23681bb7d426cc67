package coordinator

import (
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// TestSidesCountEveryGeneration: the rows a LATENCY query's adaptation
// sent at each side stay in the query's record after a re-plan starts the
// next generation (QueryInfo.Sides), as its drops do.
func TestSidesCountEveryGeneration(t *testing.T) {
	c := bareCoordinator()
	qs := &supervisor{c: c, info: deploy.QueryInfo{Query: "q1", Generation: 1, Workers: []string{"w1"}, State: deploy.StateRunning},
		status: map[string]deploy.Status{}, front: map[string]uint64{}, live: control.NewLive()}
	c.queries["q1"] = qs
	status := func(gen int, sides map[string]int64) {
		b, _ := json.Marshal(deploy.Status{Query: "q1", Worker: "w1", Generation: gen, State: deploy.StateRunning,
			Operators: []dataflow.InstanceStats{{Operator: "adapt image 28x28 float32 by link", Counters: sides}}})
		c.onStatus(&nats.Msg{Subject: deploy.QuerySubject("", "q1", "status.w1"), Data: b})
	}
	status(1, map[string]int64{"side_28": 10, "side_14": 2})
	qs.nextGeneration()
	qs.closeGeneration(1, nil, 0)
	qs.info.Generation = 2
	status(2, map[string]int64{"side_20": 4, "side_14": 1})
	qs.nextGeneration()
	qs.closeGeneration(2, nil, 0)
	qs.info.Generation = 3
	status(3, map[string]int64{"side_20": 1})
	got := qs.info.Sides()
	if got["side_28"] != 10 || got["side_20"] != 5 || got["side_14"] != 3 {
		t.Fatalf("sides %v, want 28: 10, 20: 5, 14: 3", got)
	}
}

// bareCoordinator is a Coordinator with no connection or configuration,
// only the maps its supervisors read: the internal tests drive a
// supervisor's reports by hand.
func bareCoordinator() *Coordinator {
	return &Coordinator{queries: map[string]*supervisor{}, workers: map[string]*deploy.WorkerInfo{}}
}
