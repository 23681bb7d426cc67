package coordinator_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/devices"
	"github.com/tierflow/tierflow/runtime/worker"
)

// endless never ends: nobody publishes its subject.
var endless = deploy.Script{Filename: "q.sql", Source: "CREATE STREAM s (k BIGINT) FROM NATS 'nobody.publishes' FORMAT JSON;\nSELECT k FROM s;\n"}

// TestSubmitFailsWhenTheCoordinatorIsGone: with no coordinator a
// submission fails at once; when the coordinator dies while a query runs,
// the waiting client gives up within a few heartbeats with
// ErrCoordinatorLost instead of waiting forever.
func TestSubmitFailsWhenTheCoordinatorIsGone(t *testing.T) {
	srv := clustertest.NATSServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	client := coordinator.NewClient(clustertest.Connect(t, srv))
	client.Heartbeat = 100 * time.Millisecond
	start := time.Now()
	if _, err := client.Submit(ctx, endless, "", sinks.NewCSV(io.Discard)); err == nil || !strings.Contains(err.Error(), "no coordinator") {
		t.Fatalf("submit without a coordinator = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("submit without a coordinator took %v", d)
	}

	cnc := clustertest.Connect(t, srv)
	co, err := coordinator.Start(coordinator.Config{Conn: cnc, Heartbeat: 100 * time.Millisecond, Exec: cluster.ExecHooks(cnc, "", nil, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	wnc := clustertest.Connect(t, srv)
	w, err := worker.Start(ctx, worker.Config{Conn: wnc, Name: "w1", Tier: "edge", Inventory: &devices.Inventory{CPUs: 1}, Exec: cluster.ExecHooks(wnc, "", nil, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	done := make(chan error, 1)
	go func() {
		_, err := client.Submit(ctx, endless, "q-lost", sinks.NewCSV(io.Discard))
		done <- err
	}()
	clustertest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if q, ok := co.Query("q-lost"); !ok || q.State != deploy.StateRunning {
			return errors.New("the query is not running yet")
		}
		return nil
	})
	// The coordinator dies without a word: its connection goes.
	cnc.Close()
	killed := time.Now()
	select {
	case err := <-done:
		if !errors.Is(err, coordinator.ErrCoordinatorLost) {
			t.Fatalf("submit after the coordinator died = %v, want ErrCoordinatorLost", err)
		}
		t.Logf("%v after %v", err, time.Since(killed).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatal("submit still waits 5s after its coordinator died")
	}
}
