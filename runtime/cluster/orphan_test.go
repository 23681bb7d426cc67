package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// TestRestartedCoordinatorRedeploysUnstartedGeneration: a coordinator that
// goes away in the middle of a re-deployment (it stopped the old
// generation and had the workers build the new one, but never started it)
// leaves a query nothing runs. The new coordinator learns it back from the
// workers' unstarted parts, lists it, and deploys it again from the epoch
// that generation was to resume at: the printed table is byte for byte
// that of an undisturbed run. (Under load, a client's resume after a NATS
// server outage reached the old coordinator just before it went away,
// and SHOW QUERIES on the new one never listed the query.)
func TestRestartedCoordinatorRedeploysUnstartedGeneration(t *testing.T) {
	t.Parallel() // see "Tests in parallel" (cluster_test.go)
	f := clustertest.NewFixture(t, 1000)
	script := strings.Replace(clustertest.Query, "FORMAT CSV;", "FORMAT CSV RATE 200 PER SECOND;", 1)
	want, _ := runShaped(t, f, script, nil, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: f.Infra, Placement: coordinator.PlaceRules})
	defer c.Close()
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- c.RunScript(ctx, f.Dir+"/query.sql", script, cluster.ScriptOptions{Stdout: &out, Replay: true})
	}()
	var q deploy.QueryInfo
	clustertest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		for _, x := range c.Coordinator.Queries() {
			if x.State == deploy.StateRunning && x.Committed > 0 {
				q = x
				return nil
			}
		}
		return errors.New("the query has not committed results yet")
	})
	// The old coordinator goes away; its last words, played here: it had
	// every worker build generation 1 (which drops generation 0) and
	// started nothing. The parts it sends are what the workers describe to
	// a coordinator that asks about the query.
	if err := c.Coordinator.Close(); err != nil {
		t.Fatal(err)
	}
	nc, err := natsserver.Connect(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	parts := make(chan deploy.Part, 16)
	sub, err := nc.Subscribe(deploy.HeartbeatSubject("*"), func(m *nats.Msg) {
		var hb deploy.Heartbeat
		_ = json.Unmarshal(m.Data, &hb)
		for _, p := range hb.Parts {
			parts <- p
		}
		b, _ := json.Marshal(deploy.Ack{Describe: []string{q.Query}})
		_ = m.Respond(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	var part deploy.Part
	select {
	case part = <-parts:
	case <-ctx.Done():
		t.Fatal("no worker described its part")
	}
	_ = sub.Unsubscribe()
	part.Script.ResumeEpoch = q.Committed
	body, _ := json.Marshal(deploy.DeployRequest{Query: q.Query, Script: part.Script, Placement: part.Placement, Generation: part.Generation + 1,
		Results: part.Results, Owner: part.Owner, Submitted: part.Submitted})
	for _, w := range part.Placement.Workers {
		if _, err := nc.Request(deploy.DeploySubject("", q.Query, w), body, 10*time.Second); err != nil {
			t.Fatalf("deploy on %s: %v", w, err)
		}
	}
	if err := c.RestartCoordinator(); err != nil {
		t.Fatal(err)
	}
	clustertest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		qs, err := c.Client().Queries(ctx)
		if err != nil {
			return err
		}
		for _, x := range qs {
			if x.Query == q.Query && x.State == deploy.StateRunning {
				return nil
			}
		}
		return errors.New("SHOW QUERIES on the new coordinator does not list the query")
	})
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the run did not end: nothing started the query again")
	}
	if out.String() != want {
		t.Fatalf("the output differs:\n%s\nwant:\n%s", out.String(), want)
	}
	info, ok := c.Coordinator.Query(q.Query)
	if !ok || info.State != deploy.StateFinished || len(info.Recoveries) != 1 || info.Recoveries[0].LostWorker != control.LostCoordinator {
		t.Fatalf("the new coordinator's view: %+v", info)
	}
}
