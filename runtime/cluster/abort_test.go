package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// TestAdminAbortStopsARunningQuery: an admin's abort of another user's
// running query (a live stream, and a cross join busy producing rows)
// ends it on its workers before the answer comes, and the answer says the
// query was aborted; a stop of an ended query says it had ended.
func TestAdminAbortStopsARunningQuery(t *testing.T) {
	srv := clustertest.NATSServer(t)
	cnc := clustertest.Connect(t, srv)
	co, err := coordinator.Start(coordinator.Config{Conn: cnc, Heartbeat: 200 * time.Millisecond, Admins: []string{"ops"},
		Exec: cluster.ExecHooks(cnc, "", nil, 1), Placement: coordinator.PlaceRules})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { co.Close() })
	for _, name := range []string{"w1", "w2"} {
		wnc := clustertest.Connect(t, srv)
		inv := devices.Inventory{CPUs: 1}
		w, err := worker.Start(context.Background(), worker.Config{Conn: wnc, Name: name, Tier: "edge", Inventory: &inv,
			Exec: cluster.ExecHooks(wnc, "", nil, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
	}
	clustertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if len(co.Workers()) < 2 {
			return errors.New("workers not registered")
		}
		return nil
	})
	alice, ops := coordinator.NewClient(clustertest.Connect(t, srv)), coordinator.NewClient(clustertest.Connect(t, srv))
	alice.User, ops.User = "alice", "ops"
	dir, scripts := clustertest.WriteAbuse(t, 20000)
	for name, src := range map[string]string{
		"live":       "CREATE STREAM s (n INT) FROM NATS 'feed.never' FORMAT JSON;\nSELECT n FROM s;\n",
		"cross join": scripts["cross join"],
	} {
		t.Run(name, func(t *testing.T) {
			id := strings.ReplaceAll(name, " ", "-")
			type outcome struct {
				info deploy.QueryInfo
				err  error
			}
			ended := make(chan outcome, 1)
			go func() {
				info, err := alice.Submit(context.Background(), script(dir, name, src), id, sinks.NewCSV(&strings.Builder{}))
				ended <- outcome{info, err}
			}()
			clustertest.CheckFor(t, 15*time.Second, 20*time.Millisecond, func() error {
				if q, ok := co.Query(id); !ok || q.State != deploy.StateRunning {
					return errors.New("not running yet")
				}
				return nil
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			said, err := ops.StopSaid(ctx, id, true)
			if err != nil {
				t.Fatalf("the admin's abort: %v", err)
			}
			q, _ := co.Query(id)
			if q.State != deploy.StateStopped {
				t.Errorf("after the admin's abort answered %q the query is %s, want stopped", said, q.State)
			}
			if !strings.Contains(said, "aborted") || !strings.Contains(said, id) {
				t.Errorf("the abort answered %q, want it to say the query was aborted", said)
			}
			select {
			case o := <-ended:
				if o.info.State != deploy.StateStopped {
					t.Errorf("alice's submit ended %s (%v), want stopped", o.info.State, o.err)
				}
			case <-time.After(10 * time.Second):
				t.Error("alice's submit did not end after the abort")
			}
			// The workers' heartbeats say what they run (one period late).
			clustertest.CheckFor(t, 3*time.Second, 20*time.Millisecond, func() error {
				for _, w := range co.Workers() {
					if slices.Contains(w.Queries, id) {
						return fmt.Errorf("worker %s still runs %s after the abort", w.Name, id)
					}
				}
				return nil
			})
			said, err = ops.StopSaid(ctx, id, true)
			if err == nil && !strings.Contains(said, "already") {
				t.Errorf("a second abort: %q %v, want it to say the query had already ended", said, err)
			}
		})
	}
}
