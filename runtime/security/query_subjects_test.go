package security_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// script is a one-query script in its own directory.
func script(t *testing.T, src string) deploy.Script {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "q.sql")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return deploy.Script{Filename: path, Source: src, BaseDir: dir}
}

// engineSubjectAttacks are queries a client could write to reach the
// engine's own subjects through its sources and sinks (#25): each ran with
// the worker's NATS identity before queries had an authority of their own.
func engineSubjectAttacks(victim string) map[string]string {
	feed := "CREATE STREAM feed (n INT) FROM NATS 'feed.ticks' FORMAT JSON;\n"
	sink := func(subject string) string {
		return feed + fmt.Sprintf("CREATE SINK out TO NATS '%s' FORMAT JSON;\nINSERT INTO out SELECT n FROM feed;\n", subject)
	}
	read := func(kind, subject string) string {
		return fmt.Sprintf("CREATE STREAM s (n INT) FROM %s '%s' FORMAT JSON;\nSELECT n FROM s;\n", kind, subject)
	}
	return map[string]string{
		"stop another's query (enough)":   sink(deploy.QuerySubject("", victim, "enough.w1")),
		"register a fake worker":          sink(deploy.RegisterSubject("evil")),
		"inject rows into results":        sink(deploy.UserSubject("bob", victim, "results")),
		"heartbeat as a worker":           sink(deploy.HeartbeatSubject("w1")),
		"status of another's query":       sink(deploy.QuerySubject("", victim, "status.w1")),
		"a JetStream API call":            sink("$JS.API.STREAM.DELETE.FEED"),
		"a system request":                sink("$SYS.REQ.SERVER.PING"),
		"another namespace's control":     sink("tierflow.ns1.ctl.submit.bob"),
		"read the relay":                  read("NATS", "tierflow.relay.>"),
		"read deployments (scripts)":      read("NATS", deploy.QuerySubject("", "*", "deploy.*")),
		"read another's replies":          read("NATS", "_INBOX_bob.>"),
		"read everything":                 read("NATS", ">"),
		"read everything one level down":  read("NATS", "*.>"),
		"read a KV bucket":                read("JETSTREAM", "$KV.secrets.>"),
		"read control through a wildcard": read("NATS", "*.ctl.>"),
	}
}

// TestQueryCannotReachEngineSubjects: on a secure cluster, a client's query
// naming any of the engine's subjects as a source or sink is refused when it
// is submitted, with the reason, and the other user's query keeps running.
func TestQueryCannotReachEngineSubjects(t *testing.T) {
	sc := startSecure(t)
	ctx := context.Background()
	bob := sc.client(t, "bob", "bob")
	run := sc.submit(t, bob, "qbob")
	alice := sc.client(t, "alice", "alice")
	i := 0
	for what, src := range engineSubjectAttacks("qbob") {
		i++
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := alice.Submit(cctx, script(t, src), fmt.Sprintf("attack%d", i), sinks.NewCSV(&lockedDiscard{}))
		cancel()
		if err == nil || !strings.Contains(err.Error(), "subject not allowed") {
			t.Errorf("%s: %v, want the subject refused", what, err)
		}
		if err != nil && !errors.Is(err, deploy.ErrInput) {
			t.Errorf("%s: %v is not bad input", what, err)
		}
	}
	if q, _ := sc.co.Query("qbob"); q.State != deploy.StateRunning {
		t.Fatalf("bob's query is %s after the attacks: %s", q.State, q.Error)
	}
	if ws, _ := alice.Workers(ctx); len(ws) != 1 {
		t.Errorf("workers after the attacks: %+v", ws)
	}
	if err := bob.Stop(ctx, "qbob", false); err != nil {
		t.Fatal(err)
	}
	<-run.done
}

// TestWorkerChecksSubjects: a worker refuses to build a part whose stream
// or sink names an engine subject even when the deployment comes from the
// coordinator's own identity (a coordinator that missed the check).
func TestWorkerChecksSubjects(t *testing.T) {
	sc := startSecure(t)
	cnc, err := sc.connect(t, sc.auth("coordinator"))
	if err != nil {
		t.Fatal(err)
	}
	for what, src := range engineSubjectAttacks("qbob") {
		req := deploy.DeployRequest{Query: "direct", Script: script(t, src),
			Placement: deploy.Placement{Workers: []string{"w1"}}}
		body, _ := json.Marshal(req)
		msg, err := cnc.Request(deploy.DeploySubject("", "direct", "w1"), body, 5*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var ack deploy.Ack
		if err := json.Unmarshal(msg.Data, &ack); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(ack.Error, "subject not allowed") || ack.ErrorKind != deploy.KindInput {
			t.Errorf("%s: worker answered %+v, want the subject refused as bad input", what, ack)
		}
	}
}
