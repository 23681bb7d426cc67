package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/connectors"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// recoveryRun is one `tierflow run --processes --replay` of the fixture's
// windowed aggregation over a rate-limited file stream, placed across the
// three workers (source on the edge, aggregation on the hub, sink in the
// cloud): the terminal table it prints, its --stats line, and, when kill
// names a worker, how long the coordinator took to notice its SIGKILL.
type recoveryRun struct {
	out     string
	stats   control.Summary
	noticed time.Duration
}

// Drills run in parallel: a recovery or outage drill waits on a
// rate-limited stream most of its time, so the drills (and their cases)
// call t.Parallel and run beside each other, as many at once as go test's
// -parallel (GOMAXPROCS by default), each on its own cluster of worker
// processes, NATS server and JetStream store.

// undisturbedRuns are the runs without a drill the drills compare with, by
// what ran: several drills run the same script over the same generated
// data (clustertest.NewFixture of the same size), and such a run is a
// reference, the same whichever drill asks, so it runs once per package
// instead of once per drill (about 6 s of rate-limited stream each).
var undisturbedRuns sync.Map // key -> *undisturbedRun

type undisturbedRun struct {
	once sync.Once
	ok   bool
	out  string
	s    control.Summary
}

// undisturbed is run(t) the first time key is asked for, and what that
// run returned after.
func undisturbed(t *testing.T, key string, run func() (string, control.Summary)) (string, control.Summary) {
	t.Helper()
	v, _ := undisturbedRuns.LoadOrStore(key, &undisturbedRun{})
	u := v.(*undisturbedRun)
	u.once.Do(func() {
		u.out, u.s = run()
		u.ok = true
	})
	if !u.ok {
		t.Fatalf("the undisturbed run this drill compares with failed (in the test that ran it first): %.80q", key)
	}
	return u.out, u.s
}

// undisturbedRecovery is runRecovery without a kill, run once per package
// for each script and number of rows.
func undisturbedRecovery(t *testing.T, f clustertest.Fixture, script string) recoveryRun {
	t.Helper()
	out, s := undisturbed(t, fixtureKey(t, f, "recovery", script), func() (string, control.Summary) {
		r := runRecovery(t, f, script, "")
		return r.out, r.stats
	})
	return recoveryRun{out: out, stats: s}
}

// fixtureKey names a run of query (of kind) over f's data: the data is
// generated, so its size tells fixtures apart.
func fixtureKey(t *testing.T, f clustertest.Fixture, kind, query string) string {
	t.Helper()
	st, err := os.Stat(f.Dir + "/readings.csv")
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s over %d bytes of readings\n%s", kind, st.Size(), query)
}

func runRecovery(t *testing.T, f clustertest.Fixture, script string, kill string) recoveryRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	logs := &syncBuffer{}
	// The coordinator's default heartbeat and expiry: what a user gets.
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
	var r recoveryRun
	if kill != "" {
		// Kill once the query is running and has committed a few windows.
		clustertest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
			for _, q := range c.Coordinator.Queries() {
				if q.State == deploy.StateRunning && q.Committed > 0 && q.ResultRows >= 3 {
					return nil
				}
			}
			return errors.New("the query has not committed results yet")
		})
		killed := time.Now()
		if err := c.Kill(kill); err != nil {
			t.Fatal(err)
		}
		clustertest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
			for _, q := range c.Coordinator.Queries() {
				if q.Generation > 0 {
					return nil
				}
			}
			return fmt.Errorf("worker %s not noticed yet", kill)
		})
		r.noticed = time.Since(killed)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run (kill %q): %v\n%s", kill, err, logs.String())
		}
	case <-ctx.Done():
		t.Fatalf("run (kill %q) did not end\n%s", kill, logs.String())
	}
	if err := json.Unmarshal(stats.Bytes(), &r.stats); err != nil {
		t.Fatalf("stats %q: %v", stats.String(), err)
	}
	r.out = out.String()
	return r
}

// TestKillEachWorkerMidQuery is issue 13's "done when" for recovery: a
// windowed aggregation over a rate-limited file stream prints byte for
// byte the same table whether or not a worker is killed -9 mid-run, for
// every worker. The coordinator notices the loss within 2 s, re-deploys
// the query on the survivors, which replay the file to the committed epoch,
// and the client writes each epoch once; --stats lists the recovery.
func TestKillEachWorkerMidQuery(t *testing.T) {
	t.Parallel() // a drill (see "Drills run in parallel", recovery_test.go)
	f := clustertest.NewFixture(t, 1200)
	// 300 s of event time (30 windows) replayed in 6 s.
	script := strings.Replace(clustertest.Query, "FORMAT CSV;", "FORMAT CSV RATE 200 PER SECOND;", 1)
	want := undisturbedRecovery(t, f, script)
	// The one-process run's rows (CSV with a header) are what the table counts.
	rows := fmt.Sprintf("(%d rows)", strings.Count(f.Want, "\n")-1)
	if !strings.Contains(want.out, rows) {
		t.Fatalf("unkilled run:\n%s\nstats %+v", want.out, want.stats)
	}
	checkWholeRun(t, want.stats, fixtureRows(t, f, "readings.csv", "sensors.csv"))
	for _, w := range []string{"e1", "h1", "c1"} {
		t.Run("kill "+w, func(t *testing.T) {
			t.Parallel()
			got := runRecovery(t, f, script, w)
			if got.out != want.out {
				t.Fatalf("killing %s changed the output:\n%s\nwant:\n%s", w, got.out, want.out)
			}
			if len(got.stats.Recoveries) != 1 || got.stats.Recoveries[0].LostWorker != w || got.stats.Recoveries[0].Seconds <= 0 {
				t.Fatalf("recoveries %+v, want one of %s", got.stats.Recoveries, w)
			}
			// Expiry 1.5 s, checked every 375 ms: within 2 s, with slack for
			// a loaded test machine.
			if got.noticed > 2500*time.Millisecond {
				t.Errorf("worker %s noticed %v after the kill, want within 2s", w, got.noticed)
			}
			t.Logf("killed %s: noticed after %v, rows again %.2fs after its last heartbeat, resumed at epoch %d",
				w, got.noticed.Round(time.Millisecond), got.stats.Recoveries[0].Seconds, got.stats.Recoveries[0].Epoch)
		})
	}
}

func TestReplanNeedsTheCluster(t *testing.T) {
	code, _, errs := runCLI(t, "", "run", "--local", "--replan", "../../examples/streaming/query.sql")
	if code != exitBadInput || !strings.Contains(errs, "--replan") {
		t.Fatalf("exit %d, stderr %q; want exit 2 naming --replan", code, errs)
	}
}

// jsQuery is the fixture's windowed query over readings FROM JETSTREAM.
const jsQuery = `
CREATE STREAM readings (sensor INT, ts TIMESTAMP, temperature DOUBLE, humidity DOUBLE)
  FROM JETSTREAM 'in.readings' FORMAT CSV;
CREATE TABLE sensors (sensor INT, site VARCHAR) FROM FILE 'sensors.csv' FORMAT CSV;
SELECT s.site, count(*) AS n
FROM readings AS r JOIN sensors AS s ON r.sensor = s.sensor
WHERE r.temperature > 20
GROUP BY s.site, TUMBLE(r.ts, INTERVAL '10' SECOND);
`

// runJetStream publishes the fixture's readings into a JetStream stream at
// 250 messages a second while the query runs on worker processes, kills
// worker kill (if any) once results flow, and returns the printed table.
func runJetStream(t *testing.T, f clustertest.Fixture, kill string) (string, control.Summary) {
	t.Helper()
	if kill == "" {
		// The undisturbed run, once per package (see undisturbed).
		return undisturbed(t, fixtureKey(t, f, "jetstream", jsQuery), func() (string, control.Summary) {
			return runJetStreamDrill(t, f, nil)
		})
	}
	return runJetStreamDrill(t, f, func(c *cluster.Cluster) {
		if err := c.Kill(kill); err != nil {
			t.Fatal(err)
		}
	})
}

// runJetStreamDrill is runJetStream with drill (if any) run on the cluster
// once results flow. The publisher retries a message until the server has
// it, with a message id the stream dedupes, so a drill that takes the
// server away loses none.
func runJetStreamDrill(t *testing.T, f clustertest.Fixture, drill func(c *cluster.Cluster)) (string, control.Summary) {
	t.Helper()
	out, s, _ := runJetStreamQuery(t, f, jsQuery, drill, "")
	return out, s
}

// runJetStreamQuery is runJetStreamDrill of query; when read names a
// JetStream subject the query writes, it also returns the data of the
// messages the subject's stream holds at the end.
func runJetStreamQuery(t *testing.T, f clustertest.Fixture, query string, drill func(c *cluster.Cluster), read string) (string, control.Summary, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
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
	nc, err := natsserver.Connect(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "READINGS", Subjects: []string{"in.readings"}}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(f.Dir + "/readings.csv")
	if err != nil {
		t.Fatal(err)
	}
	pubErr := make(chan error, 1)
	go func() {
		tick := time.NewTicker(4 * time.Millisecond)
		defer tick.Stop()
		for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if i == 0 {
				continue // header
			}
			<-tick.C
			msg := nats.NewMsg("in.readings")
			msg.Data = []byte(line)
			if err := publishOnce(ctx, js, msg, strconv.Itoa(i)); err != nil {
				pubErr <- err
				return
			}
		}
		end := nats.NewMsg("in.readings")
		end.Header.Set(connectors.EndHeader, "1")
		pubErr <- publishOnce(ctx, js, end, "end")
	}()
	var out, stats bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- c.RunScript(ctx, f.Dir+"/js.sql", query, cluster.ScriptOptions{Stdout: &out, Stats: &stats})
	}()
	if drill != nil {
		clustertest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
			if read != "" {
				// A catalog sink's results go to its stream, and its
				// frontier commits epochs as the results' do.
				committed := false
				for _, q := range c.Coordinator.Queries() {
					committed = committed || q.State == deploy.StateRunning && q.Committed > 0
				}
				if n, err := js.StreamNameBySubject(ctx, read); err == nil && committed {
					if st, err := js.Stream(ctx, n); err == nil && st.CachedInfo().State.Msgs >= 3 {
						return nil
					}
				}
				return errors.New("the query has not written and committed results yet")
			}
			// The coordinator knows where the source stood before the
			// first window a recovery replays only once the source's
			// worker has reported it (with its status, not with the
			// commit): until then a recovery replays the stream from
			// its start.
			for _, q := range c.Coordinator.Queries() {
				if q.State == deploy.StateRunning && q.Committed > 0 && q.ResultRows >= 3 && q.ResumeSeq["readings"] > 1 {
					return nil
				}
			}
			return errors.New("the query has not committed results, or the coordinator knows no resume position for them, yet")
		})
		drill(c)
	}
	if err := <-done; err != nil {
		t.Fatalf("run (drill %v): %v\n%s", drill != nil, err, logs.String())
	}
	if err := <-pubErr; err != nil {
		t.Fatal(err)
	}
	var s control.Summary
	if err := json.Unmarshal(stats.Bytes(), &s); err != nil {
		t.Fatalf("stats %q: %v", stats.String(), err)
	}
	var held []string
	if read != "" {
		name, err := js.StreamNameBySubject(ctx, read)
		if err != nil {
			t.Fatal(err)
		}
		cons, err := js.OrderedConsumer(ctx, name, jetstream.OrderedConsumerConfig{})
		if err != nil {
			t.Fatal(err)
		}
		for {
			m, err := cons.Next(jetstream.FetchMaxWait(time.Second))
			if err != nil {
				break
			}
			if len(m.Data()) > 0 {
				held = append(held, string(m.Data()))
			}
		}
	}
	return out.String(), s, held
}

// TestKillWorkerJetStreamSink: INSERT INTO a JetStream sink of the windowed
// query over a JetStream stream holds each result once when a worker is
// killed -9 mid-run: the new generation resumes at the epoch its sink had
// committed and drops results below it, and the stream dedupes what it
// writes again (message ids).
func TestKillWorkerJetStreamSink(t *testing.T) {
	t.Parallel() // a drill (see "Drills run in parallel", recovery_test.go)
	f := clustertest.NewFixture(t, 1000)
	query := strings.Replace(jsQuery, "SELECT s.site", "CREATE SINK counts TO JETSTREAM 'out.counts' FORMAT JSON;\nINSERT INTO counts\nSELECT s.site", 1)
	_, _, want := runJetStreamQuery(t, f, query, nil, "out.counts")
	if len(want) != strings.Count(f.Want, "\n")-1 {
		t.Fatalf("unkilled run wrote %d rows, want %d", len(want), strings.Count(f.Want, "\n")-1)
	}
	_, s, got := runJetStreamQuery(t, f, query, func(c *cluster.Cluster) {
		if err := c.Kill("e1"); err != nil {
			t.Fatal(err)
		}
	}, "out.counts")
	if len(s.Recoveries) != 1 || s.Recoveries[0].Epoch == 0 {
		t.Fatalf("recoveries %+v, want one, from the epoch the sink had committed", s.Recoveries)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("killing e1 changed the sink's stream (%d rows, want %d):\n%s\nwant:\n%s", len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestKillWorkerJetStream: a query over a JetStream stream loses nothing
// when a worker is killed -9 mid-run: the new generation's consumer starts
// at the stream sequence its source recorded before the first window it
// must replay (not at the stream's start), and the client writes each
// epoch once.
func TestKillWorkerJetStream(t *testing.T) {
	t.Parallel() // a drill (see "Drills run in parallel", recovery_test.go)
	f := clustertest.NewFixture(t, 1000)
	want, ws := runJetStream(t, f, "")
	if err := sameTableRows(want, f.Want); err != nil {
		t.Fatalf("unkilled run: %v\n%s", err, want)
	}
	whole := fixtureRows(t, f, "readings.csv", "sensors.csv")
	checkWholeRun(t, ws, whole)
	got, s := runJetStream(t, f, "e1")
	if got != want {
		t.Fatalf("killing e1 changed the output:\n%s\nwant:\n%s", got, want)
	}
	if len(s.Recoveries) != 1 || s.Recoveries[0].LostWorker != "e1" || s.Recoveries[0].LostMessages != 0 {
		t.Fatalf("recoveries %+v, want one of e1 with nothing lost", s.Recoveries)
	}
	// Rows in are the last generation's: a replay from the stream's start
	// would read every row again.
	if s.RowsIn <= 0 || s.RowsIn >= whole {
		t.Fatalf("the recovered generation read %d rows, want fewer than the %d of the whole stream and table", s.RowsIn, whole)
	}
	t.Logf("resumed at epoch %d, read %d of %d rows", s.Recoveries[0].Epoch, s.RowsIn, whole)
}

// fixtureRows is the rows of f's files (less their headers): what a run
// that reads them once counts as rows in.
func fixtureRows(t *testing.T, f clustertest.Fixture, files ...string) int64 {
	t.Helper()
	var n int64
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(f.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		n += int64(strings.Count(string(b), "\n") - 1)
	}
	return n
}

// checkWholeRun checks an undisturbed run's rows in. Its drills compare
// with the rows of the fixture, not with that run's rows in: rows in are
// the last generation's (control.Summary), and on a loaded machine late
// heartbeats can make an undisturbed run recover too (at load 13 one
// resumed near the stream's end and counted 89 of 1008). A run that did
// not change generation counts every row: each part's last status carries
// its final counts, and the coordinator ends a query only once every
// part's has come.
func checkWholeRun(t *testing.T, s control.Summary, whole int64) {
	t.Helper()
	if len(s.Recoveries) > 0 || len(s.Replans) > 0 {
		t.Logf("the undisturbed run changed generation (recoveries %+v, re-plans %+v): its rows in, %d, are its last generation's", s.Recoveries, s.Replans, s.RowsIn)
		return
	}
	if s.RowsIn != whole {
		t.Fatalf("the undisturbed run read %d rows, want every one of the %d it reads", s.RowsIn, whole)
	}
}

// publishOnce publishes msg into JetStream until the server acknowledges
// it: a message sent as the server went away gets no acknowledgement, and
// is sent again under the same id, which the stream dedupes.
func publishOnce(ctx context.Context, js jetstream.JetStream, msg *nats.Msg, id string) error {
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := js.PublishMsg(pctx, msg, jetstream.WithMsgID(id))
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
	}
}

// sameTableRows checks a printed table's row count against a CSV result.
func sameTableRows(table, csv string) error {
	if want := fmt.Sprintf("(%d rows)", strings.Count(csv, "\n")-1); !strings.Contains(table, want) {
		return fmt.Errorf("table does not end with %s", want)
	}
	return nil
}
