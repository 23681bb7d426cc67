package coordinator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/devices"
	"github.com/tierflow/tierflow/runtime/worker"
)

// TestWorkerRegistersWithRestartedCoordinator: a coordinator that comes back
// without its state learns the workers again from their next heartbeat.
func TestWorkerRegistersWithRestartedCoordinator(t *testing.T) {
	srv := clustertest.NATSServer(t)
	cnc := clustertest.Connect(t, srv)
	wnc := clustertest.Connect(t, srv)

	// The worker starts first and waits for a coordinator.
	type started struct {
		w   *worker.Worker
		err error
	}
	ch := make(chan started, 1)
	go func() {
		w, err := worker.Start(context.Background(), worker.Config{Conn: wnc, Name: "w1", Tier: "edge", Type: "x4",
			Inventory: &devices.Inventory{CPUs: 4, MemoryTotal: 8 << 30}})
		ch <- started{w, err}
	}()
	co, err := coordinator.Start(coordinator.Config{Conn: cnc, Heartbeat: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	st := <-ch
	if st.err != nil {
		t.Fatal(st.err)
	}
	defer st.w.Close()
	ws := co.Workers()
	if len(ws) != 1 || ws[0].Name != "w1" || ws[0].Tier != "edge" || ws[0].CPUs != 4 || ws[0].MemoryBytes != 8<<30 {
		t.Fatalf("workers %+v", ws)
	}
	co.Close()

	co2, err := coordinator.Start(coordinator.Config{Conn: cnc, Heartbeat: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer co2.Close()
	clustertest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		if n := len(co2.Workers()); n != 1 {
			return fmt.Errorf("%d workers", n)
		}
		return nil
	})
	ws, err = coordinator.NewClient(cnc).Workers(context.Background())
	if err != nil || len(ws) != 1 || ws[0].Name != "w1" {
		t.Fatalf("SHOW WORKERS over NATS: %+v %v", ws, err)
	}
}

func TestBadNames(t *testing.T) {
	srv := clustertest.NATSServer(t)
	nc := clustertest.Connect(t, srv)
	if _, err := worker.Start(context.Background(), worker.Config{Conn: nc, Name: "bad.name", Tier: "edge"}); err == nil {
		t.Fatal("a worker name with a dot was accepted")
	}
	co, err := coordinator.Start(coordinator.Config{Conn: nc})
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	if err := co.Stop("nope", false); err == nil {
		t.Fatal("stopping an unknown query succeeded")
	}
}
