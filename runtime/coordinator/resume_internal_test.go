package coordinator

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// TestRecoveryAfterAResumeStartsWhereTheClientIs: after a NATS outage the
// client asks to resume from the epoch it has written, below what the
// sinks had sent (their results published while it was away are gone).
// A later recovery of the query (a worker expiring under load, or one
// gone while the resumed generation deploys) must not resume at the old
// sinks' frontier: the client reads only the newest generation, so the
// epochs between would be lost. Before, the committed epoch stayed at
// that frontier, and the old generation's reports moved it on until the
// next generation opened: TestCoordinatorRestartMidQuery lost 10 of 100
// rows that way once at load 20+.
func TestRecoveryAfterAResumeStartsWhereTheClientIs(t *testing.T) {
	c := bareCoordinator()
	p := &deploy.Placement{Query: "q1", Workers: []string{"e1", "h1", "c1"},
		Operators: []deploy.OperatorPlan{{Name: "scan readings", Workers: []int{0}}, {Name: "aggregate", Workers: []int{1}}, {Name: "sink", Workers: []int{2}}}}
	qs := newSupervisor(c, deploy.SubmitRequest{Query: "q1", Owner: "alice"},
		deploy.QueryInfo{Query: "q1", Owner: "alice", Generation: 0, Workers: p.Workers, Placement: p, State: deploy.StateRunning})
	qs.state = genRunning
	c.queries["q1"] = qs
	sinkSent := func(gen int, frontier uint64) {
		b, _ := json.Marshal(deploy.Status{Query: "q1", Worker: "c1", Generation: gen, State: deploy.StateRunning,
			SinkFrontier: frontier, HasSinkFrontier: true})
		c.onStatus(&nats.Msg{Subject: deploy.QuerySubject("", "q1", "status.c1"), Data: b})
	}
	committed := func() uint64 { return qs.snapshot().Committed }

	sinkSent(0, 30)
	if got := committed(); got != 30 {
		t.Fatalf("committed %d, want the sink's frontier 30", got)
	}
	// The client wrote every epoch below 10, and lost the rest.
	if err := qs.resumeAsked("alice", false, 10); err != nil {
		t.Fatal(err)
	}
	old, ok := qs.begin(change{lost: control.LostServer, at: time.Now()})
	if !ok || old.epoch != 10 {
		t.Fatalf("the resume's recovery starts at %d (ok %v), want the client's 10", old.epoch, ok)
	}
	// The old generation reports until the next one opens.
	sinkSent(0, 40)
	if _, _, ok := qs.openGeneration(change{lost: control.LostServer, at: time.Now()}, old, placed{placement: p}, nil); !ok {
		t.Fatal("generation 1 did not open")
	}
	if got := committed(); got > 10 {
		t.Fatalf("committed %d once generation 1 opened, want no more than the client's 10", got)
	}
	// Generation 1 resumed at 10; its sink's frontier moves the commit.
	sinkSent(1, 12)
	if got := committed(); got != 12 {
		t.Fatalf("committed %d after generation 1's sink passed 12, want 12", got)
	}
	again, ok := qs.begin(change{lost: "h1", at: time.Now()})
	if !ok || again.epoch != 12 {
		t.Fatalf("a recovery after the resume starts at %d (ok %v), want 12, what generation 1's sink sent", again.epoch, ok)
	}
}

// TestResumeOfAQueryThatEndedMeanwhile: a client whose connection came
// back after its query ended (a slow consumer's disconnect under a flood
// of results) is told how the query ended, its failure and its kind, and
// ends with that. Before, the answer was an error string the client took
// for a lost coordinator: "coordinator lost: query q1 ended (failed) while
// its client was disconnected", with the failure's reason gone.
func TestResumeOfAQueryThatEndedMeanwhile(t *testing.T) {
	nc := embeddedNATS(t)
	c := bareCoordinator()
	why := "w1: resource limit: join[0] output holds 55.9 MiB: query q1 on worker w1 holds 63.8 MiB, over its memory limit of 64.0 MiB"
	qs := newSupervisor(c, deploy.SubmitRequest{Query: "q1", Owner: "alice"}, deploy.QueryInfo{Query: "q1", Owner: "alice", State: deploy.StateRunning})
	qs.state = genRunning
	c.queries["q1"] = qs
	qs.mu.Lock()
	qs.end(deploy.StateFailed, why, deploy.KindLimit)
	qs.mu.Unlock()
	sub, err := nc.Subscribe(deploy.ResumeSubject("alice"), c.onResume)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	client := NewClient(nc)
	client.User = "alice"
	_, err = client.resume("q1", 10, 0, 5*time.Second)
	var away *endedAway
	if !errors.As(err, &away) || errors.Is(err, ErrCoordinatorLost) {
		t.Fatalf("resume of an ended query: %v, want how it ended, not a lost coordinator", err)
	}
	if deploy.KindOf(err) != deploy.KindLimit || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "failed while its client was disconnected") {
		t.Errorf("resume of an ended query: %v (kind %q), want its failure for its limit", err, deploy.KindOf(err))
	}
}
