package worker_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/devices"
	"github.com/tierflow/tierflow/runtime/worker"
)

// buggyAbs is abs with a bug: it panics.
func buggyAbs(*functions.Ctx, arrow.DataType, []compute.Datum, int) (arrow.Array, error) {
	panic("function bug: index out of range")
}

// syncBuffer is a log both the worker's goroutines and the test use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// An operator that panics on a worker fails its query with the panic's
// message (the stack goes to the worker's log); the worker and the
// coordinator live on and run the next query.
func TestOperatorPanicFailsQueryNotWorker(t *testing.T) {
	srv := clustertest.NATSServer(t)
	nc := clustertest.Connect(t, srv)
	co, err := coordinator.Start(coordinator.Config{Conn: nc, Exec: cluster.ExecHooks(nc, "", nil, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	var log syncBuffer
	wnc := clustertest.Connect(t, srv)
	hooks := cluster.ExecHooks(wnc, "", nil, 1)
	w, err := worker.Start(context.Background(), worker.Config{Conn: wnc, Name: "w1", Tier: "edge", Inventory: &devices.Inventory{CPUs: 1},
		Log: slog.New(slog.NewTextHandler(&log, nil)),
		Exec: func(o *exec.Options, p deploy.ExecPart) {
			hooks(o, p)
			o.Functions = functions.Builtins().WithScalar("abs", buggyAbs)
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	client := coordinator.NewClient(clustertest.Connect(t, srv))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	script := clustertest.WriteData(t, t.TempDir(), 200)
	bad := script
	bad.Source = "CREATE STREAM readings (sensor INT, ts TIMESTAMP, temperature DOUBLE, humidity DOUBLE) FROM FILE 'readings.csv' FORMAT CSV;\n" +
		"SELECT abs(temperature) AS a FROM readings;"
	var out bytes.Buffer
	info, err := client.Submit(ctx, bad, "", sinks.NewCSV(&out))
	if !errors.Is(err, coordinator.ErrQuery) || !strings.Contains(err.Error(), "panicked") || !strings.Contains(err.Error(), "function bug") {
		t.Fatalf("submit of a panicking function = %v (%+v), want the query failed naming the panic\n%s", err, info, log.String())
	}
	if info.State != deploy.StateFailed {
		t.Fatalf("state %q, want failed", info.State)
	}
	clustertest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if !strings.Contains(log.String(), "panic_test.go") {
			return errors.New("the worker's log has no stack of the panic")
		}
		return nil
	})

	// The same worker runs the next query.
	want := clustertest.Local(t, script)
	clustertest.RunMatches(t, ctx, func(ctx context.Context, s deploy.Script, out sinks.Writer) (deploy.QueryInfo, error) {
		return client.Submit(ctx, s, "", out)
	}, script, want)
}
