package coordinator

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// TestDroppedCountsEveryGeneration: rows a generation dropped (lazily, past
// their deadline) stay in the query's count after a re-plan or recovery
// starts the next one; before, only the running generation's drops showed.
func TestDroppedCountsEveryGeneration(t *testing.T) {
	c := bareCoordinator()
	qs := &supervisor{c: c, info: deploy.QueryInfo{Query: "q1", Generation: 1, Workers: []string{"w1"}, State: deploy.StateRunning},
		status: map[string]deploy.Status{}, front: map[string]uint64{}, live: control.NewLive()}
	c.queries["q1"] = qs
	status := func(gen int, drops dataflow.DropCounts, latencies ...time.Duration) {
		sink := dataflow.InstanceStats{Operator: "sink"}
		for _, d := range latencies {
			sink.EndToEnd.AddSample(d)
			if d > 100*time.Millisecond {
				sink.SLOMissRows++
			}
		}
		b, _ := json.Marshal(deploy.Status{Query: "q1", Worker: "w1", Generation: gen, State: deploy.StateRunning, Dropped: drops,
			Operators: []dataflow.InstanceStats{sink}})
		c.onStatus(&nats.Msg{Subject: deploy.QuerySubject("", "q1", "status.w1"), Data: b})
	}
	status(1, dataflow.DropCounts{dataflow.DropDeadline: 5})
	status(1, dataflow.DropCounts{dataflow.DropDeadline: 7}, 20*time.Millisecond, 300*time.Millisecond) // the part's totals
	if got := qs.info.Dropped[dataflow.DropDeadline]; got != 7 {
		t.Fatalf("generation 1: %d dropped, want 7", got)
	}
	qs.nextGeneration()
	qs.closeGeneration(1, nil, 0)
	qs.info.Generation = 2
	status(2, dataflow.DropCounts{dataflow.DropDeadline: 3})
	if got := qs.info.Dropped[dataflow.DropDeadline]; got != 10 {
		t.Fatalf("after generation 2's status: %d dropped, want 7 + 3", got)
	}
	status(2, dataflow.DropCounts{dataflow.DropDeadline: 4}, 30*time.Millisecond)
	if got := qs.info.Dropped[dataflow.DropDeadline]; got != 11 {
		t.Fatalf("a second status must not add generation 1's drops again: %d, want 11", got)
	}
	// The summary's latency and miss rate cover both generations' rows:
	// 3 written (one over 100 ms) and 11 dropped past their deadline.
	qs.info.LatencySLOMs = 100
	s := qs.info.Summary()
	if s.SLOMissRate == nil || *s.SLOMissRate != 12.0/14.0 {
		t.Fatalf("slo_miss_rate %v, want 12/14", s.SLOMissRate)
	}
	if s.LatencyMs.P99 < 250 {
		t.Fatalf("p99 %.1f ms: generation 1's 300 ms row is missing", s.LatencyMs.P99)
	}
}

// TestDroppedCountsTheStopsAnswer: a cut-over's stop is answered by each
// part with its last status; rows it dropped after its last report count
// in the query's total (before, only the last report's drops did, and a
// scene dropped in the last half second before a re-plan vanished from the
// summary), but not those of epochs the next generation replays, which
// answers them itself. An answer without the part's statistics leaves its
// report. The steps are a re-plan's: the next generation opens (its
// number moves on, the old statuses are set aside), then the old parts'
// answers come, with the epoch the next generation resumes from.
func TestDroppedCountsTheStopsAnswer(t *testing.T) {
	c := bareCoordinator()
	qs := &supervisor{c: c, info: deploy.QueryInfo{Query: "q1", Generation: 1, Workers: []string{"w1", "w2"}, State: deploy.StateRunning},
		status: map[string]deploy.Status{}, front: map[string]uint64{}, live: control.NewLive()}
	c.queries["q1"] = qs
	report := func(w string, gen int, drops int64) deploy.Status {
		return deploy.Status{Query: "q1", Worker: w, Generation: gen, State: deploy.StateRunning, Dropped: dataflow.DropCounts{dataflow.DropDeadline: drops},
			Operators: []dataflow.InstanceStats{{Operator: "sink"}}}
	}
	for _, st := range []deploy.Status{report("w1", 1, 2), report("w2", 1, 1)} {
		b, _ := json.Marshal(st)
		c.onStatus(&nats.Msg{Subject: deploy.QuerySubject("", "q1", "status."+st.Worker), Data: b})
	}
	// w1 stopped having dropped 5: one at epoch 10 and one at 15 before
	// its last report, one more at 15 after it, two at 20, which the next
	// generation (resumed at 20) replays.
	w1 := report("w1", 1, 5)
	w1.State = deploy.StateStopped
	w1.DroppedAt = map[dataflow.Epoch]dataflow.DropCounts{10: {dataflow.DropDeadline: 1}, 15: {dataflow.DropDeadline: 2}, 20: {dataflow.DropDeadline: 2}}
	bare := deploy.Status{Query: "q1", Worker: "w2", Generation: 1, State: deploy.StateStopped} // no statistics
	qs.mu.Lock()
	qs.info.Generation = 2
	qs.nextGeneration()
	// A late status of generation 1 is not the query's any more.
	qs.mu.Unlock()
	b, _ := json.Marshal(report("w1", 1, 9))
	c.onStatus(&nats.Msg{Subject: deploy.QuerySubject("", "q1", "status.w1"), Data: b})
	qs.mu.Lock()
	qs.closeGeneration(1, map[string]deploy.Status{"w1": w1, "w2": bare}, 20)
	qs.mu.Unlock()
	b, _ = json.Marshal(report("w1", 2, 0))
	c.onStatus(&nats.Msg{Subject: deploy.QuerySubject("", "q1", "status.w1"), Data: b})
	if got := qs.info.Dropped[dataflow.DropDeadline]; got != 4 {
		t.Fatalf("%d dropped, want w1's 3 below epoch 20 (its stop's answer) + w2's 1 (its last report)", got)
	}
}
