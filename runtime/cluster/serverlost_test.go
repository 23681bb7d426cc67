package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/devices"
	"github.com/tierflow/tierflow/runtime/worker"
)

// A client whose NATS server goes away for good hears of it: once its
// connection gives up reconnecting, Submit fails saying so; interrupted
// while the server is away, it returns at once. Before, it waited forever
// on a closed connection (tierflow submit hung, silent, after its
// coordinator's embedded server stopped) and an interrupt waited out a
// stop no one could hear (15 s and more).
func TestSubmitHearsItsServerIsGone(t *testing.T) {
	t.Parallel() // see "Tests in parallel" (cluster_test.go)
	for _, interrupt := range []bool{false, true} {
		name := "server gone"
		if interrupt {
			name = "interrupted while it is away"
		}
		t.Run(name, func(t *testing.T) {
			srv, err := natsserver.Start(natsserver.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Shutdown()
			// The connections close first at the end: the coordinator and
			// the worker then leave without waiting on a server that is gone.
			var conns []*nats.Conn
			var closers []func()
			t.Cleanup(func() {
				for _, nc := range conns {
					nc.Close()
				}
				for _, c := range closers {
					c()
				}
			})
			connect := func(name string, opts ...nats.Option) *nats.Conn {
				nc, err := natsserver.Connect(srv.ClientURL(), append(opts, nats.Name(name))...)
				if err != nil {
					t.Fatal(err)
				}
				conns = append(conns, nc)
				return nc
			}
			co, err := coordinator.Start(coordinator.Config{Conn: connect("coordinator"), Heartbeat: 200 * time.Millisecond, Placement: coordinator.PlaceRules})
			if err != nil {
				t.Fatal(err)
			}
			closers = append(closers, func() { co.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			wk, err := worker.Start(ctx, worker.Config{Conn: connect("w1"), Name: "w1", Tier: "edge", Inventory: &devices.Inventory{CPUs: 2}})
			if err != nil {
				t.Fatal(err)
			}
			closers = append(closers, func() { wk.Close() })
			// The readings replay at 100 rows/s: a minute's query.
			script := clustertest.WriteData(t, t.TempDir(), 6000)
			script.Source = strings.Replace(script.Source, "FORMAT CSV;", "FORMAT CSV RATE 100 PER SECOND;", 1)
			script.Pace = &deploy.Pace{AtRate: true}
			client := coordinator.NewClient(connect("client", nats.MaxReconnects(3), nats.ReconnectWait(50*time.Millisecond)))
			client.Heartbeat = 100 * time.Millisecond
			sub, stop := context.WithCancel(ctx)
			defer stop()
			done := make(chan error, 1)
			go func() {
				_, err := client.Submit(sub, script, "doomed", sinks.NewCSV(&strings.Builder{}))
				done <- err
			}()
			clustertest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
				if q, ok := co.Query("doomed"); !ok || q.State != deploy.StateRunning {
					return fmt.Errorf("the query is not running yet (%s)", q.State)
				}
				return nil
			})
			srv.Shutdown()
			gone := time.Now()
			if interrupt {
				time.Sleep(50 * time.Millisecond)
				stop()
			}
			select {
			case err := <-done:
				took := time.Since(gone)
				switch {
				case interrupt && (err == nil || !strings.Contains(err.Error(), "interrupted") || took > 2*time.Second):
					t.Errorf("interrupted with the server away: %v after %s, want a prompt error saying so", err, took.Round(time.Millisecond))
				case !interrupt && !errors.Is(err, coordinator.ErrCoordinatorLost):
					t.Errorf("the server gone: %v after %s, want the coordinator lost", err, took.Round(time.Millisecond))
				}
				t.Logf("returned %s after the server went: %v", took.Round(time.Millisecond), err)
			case <-time.After(20 * time.Second):
				t.Fatal("Submit still waits 20 s after its server went away")
			}
		})
	}
}
