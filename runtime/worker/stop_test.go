package worker_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// TestStopAnswersWithItsSinkFrontier: a re-plan's stop asks for an answer
// (a reply subject). The worker answers once its part of that generation
// has stopped, with the frontier its sinks committed up to then, at least
// the last one its status reports carried (the coordinator resumes the
// next generation there, not at the status reports' older epoch); a worker
// without a part of the generation answers at once, with no frontier.
func TestStopAnswersWithItsSinkFrontier(t *testing.T) {
	nc, w := coordinatorAndWorker(t)

	dir := t.TempDir()
	var rows strings.Builder
	rows.WriteString("sensor,ts,temperature\n")
	start := time.Date(2024, 5, 1, 8, 0, 0, 0, time.UTC)
	for i := range 2000 {
		fmt.Fprintf(&rows, "%d,%s,%d\n", i%8, start.Add(time.Duration(i)*20*time.Millisecond).Format("2006-01-02 15:04:05.000"), i)
	}
	if err := os.WriteFile(filepath.Join(dir, "readings.csv"), []byte(rows.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	src := `CREATE STREAM readings (sensor INT, ts TIMESTAMP, temperature DOUBLE)
  FROM FILE 'readings.csv' FORMAT CSV RATE 50 PER SECOND;
SELECT sensor, ts, temperature FROM readings;`
	script := deploy.Script{Filename: filepath.Join(dir, "q.sql"), Source: src, BaseDir: dir, Replay: true}
	q, plan, err := script.Build(nil, exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := deploy.Place("x", q.Graph(), plan, []deploy.Worker{{Name: "w1", Tier: "edge"}}, deploy.Options{Tiers: []string{"edge"}})
	if err != nil {
		t.Fatal(err)
	}
	status, err := nc.SubscribeSync(deploy.QuerySubject("", "x", "status.w1"))
	if err != nil {
		t.Fatal(err)
	}
	if ack := deployTo(t, nc, "x", "w1", deploy.DeployRequest{Query: "x", Script: script, Placement: *p, Generation: 1}); ack.Error != "" {
		t.Fatal(ack.Error)
	}
	if err := nc.Publish(deploy.QuerySubject("", "x", "start"), nil); err != nil {
		t.Fatal(err)
	}
	// Wait for a status report that has committed something.
	var reported uint64
	deadline := time.Now().Add(10 * time.Second)
	for reported == 0 {
		m, err := status.NextMsg(time.Until(deadline))
		if err != nil {
			t.Fatalf("no status with a sink frontier: %v", err)
		}
		var st deploy.Status
		if json.Unmarshal(m.Data, &st) == nil && st.State == deploy.StateRunning && st.HasSinkFrontier {
			reported = st.SinkFrontier
		}
	}

	stop := func(gen int) (deploy.Status, time.Duration) {
		t.Helper()
		b, _ := json.Marshal(deploy.StopRequest{Query: "x", Abort: true, Generation: gen, OnlyGeneration: true})
		began := time.Now()
		m, err := nc.Request(deploy.QuerySubject("", "x", "stop"), b, 5*time.Second)
		if err != nil {
			t.Fatalf("stop of generation %d: no answer: %v", gen, err)
		}
		var st deploy.Status
		if err := json.Unmarshal(m.Data, &st); err != nil {
			t.Fatal(err)
		}
		return st, time.Since(began)
	}
	if st, _ := stop(7); st.Worker != "w1" || st.Generation != 7 || st.State != "" || st.HasSinkFrontier {
		t.Errorf("stop of a generation w1 does not run: %+v, want an answer with no part and no frontier", st)
	}
	if r := w.Running(); len(r) != 1 {
		t.Fatalf("a stop of another generation stopped the query: running %v", r)
	}
	st, took := stop(1)
	if st.State != deploy.StateStopped || st.Generation != 1 || !st.HasSinkFrontier || st.SinkFrontier < reported {
		t.Fatalf("stop of generation 1: %+v, want stopped with a sink frontier of at least %d (the last status report's)", st, reported)
	}
	if r := w.Running(); len(r) != 0 {
		t.Errorf("answered before the part stopped: running %v", r)
	}
	t.Logf("stopped in %v; sink frontier %d, the last status report's %d", took, st.SinkFrontier, reported)
}
