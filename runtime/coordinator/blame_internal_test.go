package coordinator

import (
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// A query fails for the part that went past its limit, though another
// part's failure (its link's peer closed, because of that one) is in
// first: the limit's report is the reason, the query fails at once and is
// not recovered. Before, the first failed worker in the query's order
// named the reason, and a query past its memory was failed for "relay peer
// closed the link" after the recovery wait (seen beside alice's queries in
// TestAbusiveQueriesFullSize once the relay links had connections of their
// own, so that the two reports raced).
func TestTheLimitIsTheReasonWhicheverPartReportsFirst(t *testing.T) {
	c := bareCoordinator()
	c.cfg.Log = slog.New(slog.DiscardHandler)
	// A failure that does not blame the query waits this long for a lost
	// worker before it fails the query: longer than the test.
	c.cfg.Expiry, c.cfg.Heartbeat = time.Hour, time.Second
	qs := &supervisor{c: c, info: deploy.QueryInfo{Query: "q1", Workers: []string{"w1", "w2"}, State: deploy.StateRunning},
		status: map[string]deploy.Status{}, front: map[string]uint64{}, live: control.NewLive()}
	c.queries["q1"] = qs
	for _, st := range []deploy.Status{
		{Query: "q1", Worker: "w1", State: deploy.StateFailed, Error: "dataflow: operator failed: scan s[0] produce: send on q1/e0/0->1: relay peer closed the link"},
		{Query: "q1", Worker: "w2", State: deploy.StateFailed, Error: "resource limit: aggregate[1] batch: needs 3604092 windows open", ErrorKind: deploy.KindLimit},
	} {
		b, _ := json.Marshal(st)
		c.onStatus(&nats.Msg{Subject: deploy.QuerySubject("", "q1", "status."+st.Worker), Data: b})
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if qs.info.State != deploy.StateFailed || qs.info.ErrorKind != deploy.KindLimit || qs.info.Error != "w2: resource limit: aggregate[1] batch: needs 3604092 windows open" {
		t.Fatalf("query %s (%s): %q; want failed for w2's limit", qs.info.State, qs.info.ErrorKind, qs.info.Error)
	}
}
