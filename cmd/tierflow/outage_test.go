package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// outageFor is how long the drills keep the NATS server down.
const outageFor = 3 * time.Second

// runOutage is runRecovery with the embedded NATS server stopped for
// outageFor once the query has committed a few windows, and started again
// on the same port with the same JetStream store. It returns the printed
// table and the --stats summary.
func runOutage(t *testing.T, f clustertest.Fixture, script string) (string, control.Summary) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	logs := &syncBuffer{}
	c, err := cluster.StartProcesses(ctx, cluster.ProcessOptions{
		Options: cluster.Options{Infra: f.Infra, Placement: coordinator.PlaceRules},
		Binary:  os.Args[0], Env: []string{childEnv + "=real"}, Stderr: logs,
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	defer c.Close()
	var out, stats bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- c.RunScript(ctx, f.Dir+"/query.sql", script, cluster.ScriptOptions{Stdout: &out, Replay: true, Stats: &stats})
	}()
	committed := func() uint64 {
		for _, q := range c.Coordinator.Queries() {
			if q.State == deploy.StateRunning {
				return q.Committed
			}
		}
		return 0
	}
	clustertest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		if committed() > 0 {
			return nil
		}
		return errors.New("the query has not committed results yet")
	})
	if err := c.StopServer(); err != nil {
		t.Fatal(err)
	}
	// The outage itself: its length is what the drill is about, not a wait
	// for anything.
	time.Sleep(outageFor)
	if err := c.StartServer(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run with an outage: %v\n%s", err, logs.String())
		}
	case <-ctx.Done():
		t.Fatalf("run with an outage did not end\n%s", logs.String())
	}
	var s control.Summary
	if err := json.Unmarshal(stats.Bytes(), &s); err != nil {
		t.Fatalf("stats %q: %v", stats.String(), err)
	}
	return out.String(), s
}

// TestNATSOutageMidQuery is issue 13's "done when" for a server outage: a
// windowed aggregation over a rate-limited file stream, run on worker
// processes, prints byte for byte the same table when the embedded NATS
// server is stopped mid-run for a few seconds and started again on the same
// port. Every process reconnects; the client asks the coordinator to resume
// the query from the last epoch it wrote, and --stats lists that recovery.
func TestNATSOutageMidQuery(t *testing.T) {
	t.Parallel() // a drill (see "Drills run in parallel", recovery_test.go)
	f := clustertest.NewFixture(t, 1200)
	script := strings.Replace(clustertest.Query, "FORMAT CSV;", "FORMAT CSV RATE 200 PER SECOND;", 1)
	want := undisturbedRecovery(t, f, script)
	got, s := runOutage(t, f, script)
	if got != want.out {
		t.Fatalf("the outage changed the output:\n%s\nwant:\n%s", got, want.out)
	}
	if len(s.Recoveries) == 0 || s.Recoveries[0].LostWorker != control.LostServer {
		t.Fatalf("recoveries %+v, want one of the NATS server", s.Recoveries)
	}
	// Seconds run from when the coordinator saw its connection go.
	t.Logf("server down %v: rows flowed again %.2fs after the connection was lost, %.2fs after the server was back",
		outageFor, s.Recoveries[0].Seconds, s.Recoveries[0].Seconds-outageFor.Seconds())
}

// TestNATSOutageJetStream: a query over a JetStream stream loses nothing
// when the NATS server is stopped mid-run and started again with the same
// store: the stream keeps what it held, the publisher retries what the
// server did not take, and the resumed generation's consumer starts at the
// sequence its source recorded before the first window it replays.
func TestNATSOutageJetStream(t *testing.T) {
	t.Parallel() // a drill (see "Drills run in parallel", recovery_test.go)
	f := clustertest.NewFixture(t, 1000)
	want, _ := runJetStream(t, f, "")
	if err := sameTableRows(want, f.Want); err != nil {
		t.Fatalf("no outage: %v\n%s", err, want)
	}
	got, s := runJetStreamDrill(t, f, func(c *cluster.Cluster) {
		if err := c.StopServer(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(outageFor) // the outage itself, not a wait for anything
		if err := c.StartServer(); err != nil {
			t.Fatal(err)
		}
	})
	if got != want {
		t.Fatalf("the outage changed the output:\n%s\nwant:\n%s", got, want)
	}
	if len(s.Recoveries) == 0 || s.Recoveries[0].LostWorker != control.LostServer || s.Recoveries[0].LostMessages != 0 {
		t.Fatalf("recoveries %+v, want one of the NATS server with nothing lost", s.Recoveries)
	}
}

// TestCoordinatorRestartMidQuery: killing the coordinator mid-query and
// starting a new one does not stop the query. The new coordinator learns it
// back from the workers (SHOW QUERIES lists it, with its owner), the
// client keeps waiting on it, and the printed table is byte for byte that
// of an undisturbed run; so it is when a worker is killed -9 after the
// restart, which the new coordinator recovers, and when the NATS server
// goes with the coordinator: relay messages it held when it stopped are
// sent again (no coordinator is there to recover the query).
func TestCoordinatorRestartMidQuery(t *testing.T) {
	t.Parallel() // a drill (see "Drills run in parallel", recovery_test.go)
	f := clustertest.NewFixture(t, 1200)
	// 12 s of stream: a query that ended while no coordinator ran would
	// be nobody's to learn back, and a loaded machine (CI's two cores)
	// spends several seconds on a restart with the NATS server.
	script := strings.Replace(clustertest.Query, "FORMAT CSV;", "FORMAT CSV RATE 100 PER SECOND;", 1)
	want := undisturbedRecovery(t, f, script)
	for _, c := range []struct {
		name       string
		kill       string
		withServer bool
	}{
		{"alone", "", false},
		{"then kill h1", "h1", false},
		// `tierflow coordinator` serving the NATS server in its own
		// process: both go away and come back.
		{"with the NATS server", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			restartCoordinator(t, f, script, want.out, c.kill, c.withServer)
		})
	}
}

func restartCoordinator(t *testing.T, f clustertest.Fixture, script, want, kill string, withServer bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	logs := &syncBuffer{}
	c, err := cluster.StartProcesses(ctx, cluster.ProcessOptions{
		Options: cluster.Options{Infra: f.Infra, Placement: coordinator.PlaceRules, Log: slog.New(slog.NewTextHandler(logs, nil))},
		Binary:  os.Args[0], Env: []string{childEnv + "=real"}, Stderr: logs,
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	defer c.Close()
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- c.RunScript(ctx, f.Dir+"/query.sql", script, cluster.ScriptOptions{Stdout: &out, Replay: true})
	}()
	var id string
	clustertest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		for _, q := range c.Coordinator.Queries() {
			if q.State == deploy.StateRunning && q.Committed > 0 {
				id = q.Query
				return nil
			}
		}
		return errors.New("the query has not committed results yet")
	})
	if withServer {
		// One process serves both: the coordinator dies with the server,
		// before the clients and workers reconnect (an old coordinator
		// still answering them would re-deploy what it then abandons).
		if err := c.StopServer(); err != nil {
			t.Fatal(err)
		}
		_ = c.Coordinator.Close()
		if err := c.StartServer(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.RestartCoordinator(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	var learned time.Duration
	// The new coordinator learns the query at the workers' second
	// heartbeat after they register again (about 1.5 s here); a loaded
	// machine delays heartbeats, not the outcome.
	listed := func() error {
		qs, err := c.Client().Queries(ctx)
		if err != nil {
			return err
		}
		for _, q := range qs {
			if q.Query == id && q.State == deploy.StateRunning && q.Owner != "" {
				learned = time.Since(restarted)
				return nil
			}
		}
		return fmt.Errorf("SHOW QUERIES on the new coordinator does not list %s: %+v\n%s", id, qs, logs.String())
	}
	var err2 error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err2 = listed(); err2 == nil {
			break
		}
	}
	if err2 != nil {
		t.Fatalf("condition not met within 20s: %v", err2)
	}
	if kill != "" {
		if err := c.Kill(kill); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run across a coordinator restart: %v\n%s", err, logs.String())
		}
	case <-ctx.Done():
		t.Fatalf("run across a coordinator restart did not end\n%s", logs.String())
	}
	q, ok := c.Coordinator.Query(id)
	if got := out.String(); got != want {
		// The recoveries and the log say which generation resumed where.
		t.Fatalf("the restart changed the output:\n%s\nwant:\n%s\nrecoveries %+v\n%s", got, want, q.Recoveries, logs.String())
	}
	if !ok || q.State != deploy.StateFinished || q.Committed == 0 {
		t.Fatalf("the new coordinator's view of %s: %+v", id, q)
	}
	if kill != "" && (len(q.Recoveries) != 1 || q.Recoveries[0].LostWorker != kill) {
		t.Fatalf("recoveries %+v, want one of %s by the new coordinator", q.Recoveries, kill)
	}
	var resent, gaps, dups uint64
	for _, l := range q.Links {
		resent, gaps, dups = resent+l.Resent, gaps+l.Gaps, dups+l.Duplicates
	}
	t.Logf("the new coordinator listed %s %.2fs after the restart; its %d relay link ends sent %d messages again, found %d gaps, dropped %d duplicates",
		id, learned.Seconds(), len(q.Links), resent, gaps, dups)
}

// statelessQuery filters and projects the fixture's rate-limited stream:
// no operator keeps state, so a recovery need not replay what was
// committed.
const statelessQuery = `
CREATE STREAM readings (sensor INT, ts TIMESTAMP, temperature DOUBLE, humidity DOUBLE)
  FROM FILE 'readings.csv' FORMAT CSV RATE 200 PER SECOND;
SELECT sensor, ts, temperature * 2 AS t2
FROM readings
WHERE temperature > 20;
`

// TestKillWorkerResumes: a query whose worker is killed -9 mid-run resumes
// at the committed epoch where that is sound, instead of replaying its file
// from the start: a stateless one skips every row that went out below the
// epoch, one whose state is TUMBLE windows the rows of the windows that
// closed below it. The new generation's sources read past those rows
// without sending them, so the run's rows_in (what the last generation's
// sources sent) is below the file's rows, and the table is byte for byte
// the same.
func TestKillWorkerResumes(t *testing.T) {
	t.Parallel() // a drill (see "Drills run in parallel", recovery_test.go)
	f := clustertest.NewFixture(t, 1200)
	windowed := strings.Replace(clustertest.Query, "FORMAT CSV;", "FORMAT CSV RATE 200 PER SECOND;", 1)
	for _, c := range []struct {
		name, script, kill string
		reads              []string
	}{
		{"stateless", statelessQuery, "e1", []string{"readings.csv"}},
		{"tumbling windows", windowed, "h1", []string{"readings.csv", "sensors.csv"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			want := undisturbedRecovery(t, f, c.script)
			whole := fixtureRows(t, f, c.reads...)
			checkWholeRun(t, want.stats, whole)
			got := runRecovery(t, f, c.script, c.kill)
			if got.out != want.out {
				t.Fatalf("killing %s changed the output:\n%s\nwant:\n%s", c.kill, got.out, want.out)
			}
			if len(got.stats.Recoveries) != 1 || got.stats.Recoveries[0].Epoch == 0 {
				t.Fatalf("recoveries %+v, want one from a committed epoch", got.stats.Recoveries)
			}
			if got.stats.RowsIn <= 0 || got.stats.RowsIn >= whole {
				t.Fatalf("the recovered generation sent %d rows, want fewer than the %d of a whole run (and some)", got.stats.RowsIn, whole)
			}
			t.Logf("killed %s, resumed at epoch %d: sent %d of %d rows again, rows flowed %.2fs after the loss",
				c.kill, got.stats.Recoveries[0].Epoch, got.stats.RowsIn, whole, got.stats.Recoveries[0].Seconds)
		})
	}
}
