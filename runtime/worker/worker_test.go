package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/devices"
	"github.com/tierflow/tierflow/runtime/worker"
)

func deployTo(t *testing.T, nc *nats.Conn, query, name string, req deploy.DeployRequest) deploy.Ack {
	t.Helper()
	b, _ := json.Marshal(req)
	m, err := nc.Request(deploy.DeploySubject("", query, name), b, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var ack deploy.Ack
	if err := json.Unmarshal(m.Data, &ack); err != nil {
		t.Fatal(err)
	}
	return ack
}

// coordinatorAndWorker starts a NATS server, a coordinator on connection
// nc and one edge worker w1 (one CPU) on a connection of its own, all
// closed at the end of the test.
func coordinatorAndWorker(t *testing.T) (*nats.Conn, *worker.Worker) {
	t.Helper()
	return coordinatorAndWorkerOf(t, &devices.Inventory{CPUs: 1})
}

// coordinatorAndWorkerOf is coordinatorAndWorker with w1's inventory inv
// (nil: what the worker finds itself).
func coordinatorAndWorkerOf(t *testing.T, inv *devices.Inventory) (*nats.Conn, *worker.Worker) {
	t.Helper()
	srv := clustertest.NATSServer(t)
	nc := clustertest.Connect(t, srv)
	co, err := coordinator.Start(coordinator.Config{Conn: nc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { co.Close() })
	w, err := worker.Start(context.Background(), worker.Config{Conn: clustertest.Connect(t, srv), Name: "w1", Tier: "edge", Inventory: inv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return nc, w
}

// TestDeployProtocol drives one worker through the deploy subjects: a
// placement without it and a broken script are refused with a reason; a
// good part is built, listed as running, and dropped by a stop before start,
// which the worker reports as stopped.
func TestDeployProtocol(t *testing.T) {
	nc, w := coordinatorAndWorker(t)

	script := clustertest.WriteData(t, t.TempDir(), 100)
	q, plan, err := script.Build(nil, exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := deploy.Place("x", q.Graph(), plan, []deploy.Worker{{Name: "w1", Tier: "edge"}}, deploy.Options{Tiers: []string{"edge"}})
	if err != nil {
		t.Fatal(err)
	}
	other := *p
	other.Workers = []string{"w2"}
	if ack := deployTo(t, nc, "x", "w1", deploy.DeployRequest{Query: "x", Script: script, Placement: other}); !strings.Contains(ack.Error, "no part") {
		t.Errorf("deploy without a part: %q", ack.Error)
	}
	bad := script
	bad.Source = "SELECT nope FROM nowhere;"
	if ack := deployTo(t, nc, "x", "w1", deploy.DeployRequest{Query: "x", Script: bad, Placement: *p}); !strings.Contains(ack.Error, "1:") {
		t.Errorf("deploy of a broken script: %q", ack.Error)
	}

	status, err := nc.SubscribeSync(deploy.QuerySubject("", "x", "status.w1"))
	if err != nil {
		t.Fatal(err)
	}
	if ack := deployTo(t, nc, "x", "w1", deploy.DeployRequest{Query: "x", Script: script, Placement: *p}); ack.Error != "" {
		t.Fatal(ack.Error)
	}
	if r := w.Running(); len(r) != 1 || r[0] != "x" {
		t.Fatalf("running %v", r)
	}
	if ack := deployTo(t, nc, "x", "w1", deploy.DeployRequest{Query: "x", Script: script, Placement: *p}); !strings.Contains(ack.Error, "already") {
		t.Errorf("second deploy of one query: %q", ack.Error)
	}
	b, _ := json.Marshal(deploy.StopRequest{Query: "x"})
	if err := nc.Publish(deploy.QuerySubject("", "x", "stop"), b); err != nil {
		t.Fatal(err)
	}
	m, err := status.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var st deploy.Status
	if err := json.Unmarshal(m.Data, &st); err != nil || st.State != deploy.StateStopped || st.Worker != "w1" {
		t.Fatalf("status %+v %v", st, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(w.Running()) != 0 {
		if time.Now().After(deadline) {
			t.Fatal(fmt.Sprint("still running ", w.Running()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A worker registers the processors Go runs its steps on (GOMAXPROCS), not
// the machine's cores: a worker started with GOMAXPROCS=1 on a bigger
// machine is one CPU to the coordinator's admission and placement.
func TestWorkerRegistersItsProcessorsNotTheMachines(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	_, w := coordinatorAndWorkerOf(t, nil)
	if got := w.Info().CPUs; got != 1 {
		t.Errorf("worker registered %d CPUs with GOMAXPROCS 1 (the machine has %d)", got, runtime.NumCPU())
	}
	if got, want := w.Info().ModelThreads, runtime.NumCPU(); got != want {
		t.Errorf("model threads %d, want ONNX Runtime's default of every core, %d", got, want)
	}
}
