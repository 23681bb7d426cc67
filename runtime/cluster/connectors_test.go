package cluster_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/connectors"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// natsQuery is clustertest.Query with the readings FROM JETSTREAM and the
// result INSERTed INTO a core NATS subject.
const natsQuery = `
CREATE STREAM readings (sensor INT, ts TIMESTAMP, temperature DOUBLE, humidity DOUBLE)
  FROM JETSTREAM 'in.readings' FORMAT CSV;
CREATE TABLE sensors (sensor INT, site VARCHAR) FROM FILE 'sensors.csv' FORMAT CSV;
CREATE SINK counts TO NATS 'out.counts' FORMAT JSON;
INSERT INTO counts
SELECT s.site, count(*) AS n
FROM readings AS r JOIN sensors AS s ON r.sensor = s.sensor
WHERE r.temperature > 20
GROUP BY s.site, TUMBLE(r.ts, INTERVAL '10' SECOND);
`

// TestNATSStreamAndSink runs a query whose stream comes FROM JETSTREAM and
// whose sink is TO NATS across an embedded cluster: the workers build both
// through runtime/connectors on their own connections, and the rows a test
// subscriber receives equal a one-process run over the same rows in a file.
func TestNATSStreamAndSink(t *testing.T) {
	t.Parallel() // see "Tests in parallel" (cluster_test.go)
	// The reference, f.Want: the file-based query in one process.
	f := clustertest.NewFixture(t, 2000)
	ctx, c, nc := natsCluster(t, f)
	// The readings go into a JetStream stream before the query starts:
	// nothing is lost before its consumer exists. Each message is a CSV
	// line; a last message marks the end of the stream.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "READINGS", Subjects: []string{"in.readings"}}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(f.Dir, "readings.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if i == 0 {
			continue // header
		}
		if _, err := js.Publish(ctx, "in.readings", []byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	end := nats.NewMsg("in.readings")
	end.Header.Set(connectors.EndHeader, "1")
	if _, err := js.PublishMsg(ctx, end); err != nil {
		t.Fatal(err)
	}

	// The subscriber collects the sink's rows until its end marker.
	var mu sync.Mutex
	var rows []string
	ended := make(chan struct{})
	sub, err := nc.Subscribe("out.counts", func(m *nats.Msg) {
		if m.Header.Get(connectors.EndHeader) != "" {
			close(ended)
			return
		}
		mu.Lock()
		rows = append(rows, string(m.Data))
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(f.Dir, "nats.sql")
	var stdout, log bytes.Buffer
	err = c.RunScript(ctx, path, natsQuery, cluster.ScriptOptions{Stdout: &stdout, Log: &log, BatchSize: 200,
		NewOutput: func() (sinks.Writer, error) { return sinks.NewCSV(&bytes.Buffer{}), nil }})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	select {
	case <-ended:
	case <-ctx.Done():
		t.Fatalf("no end marker on out.counts; %d rows so far\n%s", len(rows), log.String())
	}
	qs := c.Coordinator.Queries()
	if len(qs) != 1 || qs[0].State != deploy.StateFinished || len(qs[0].Workers) < 2 {
		t.Fatalf("the INSERT did not run on the cluster: %+v\n%s", qs, log.String())
	}

	mu.Lock()
	got := jsonToCSV(t, rows)
	mu.Unlock()
	if err := clustertest.SameRows(got, f.Want); err != nil {
		t.Fatal(err)
	}
}

// jsonToCSV turns the sink's JSON rows {"site":..,"n":..} into the CSV the
// reference run wrote (header site,n).
func jsonToCSV(t *testing.T, rows []string) string {
	t.Helper()
	var b strings.Builder
	w := csv.NewWriter(&b)
	w.Write([]string{"site", "n"})
	for _, r := range rows {
		var row struct {
			Site string `json:"site"`
			N    int64  `json:"n"`
		}
		if err := json.Unmarshal([]byte(r), &row); err != nil {
			t.Fatalf("sink row %q: %v", r, err)
		}
		w.Write([]string{row.Site, fmt.Sprint(row.N)})
	}
	w.Flush()
	return b.String()
}

// TestJetStreamSinkOnCluster: INSERT INTO a JetStream sink runs on the
// cluster; the worker holding the sink closes it when its part ends, which
// waits for the server's acks, so every row is in the stream when the
// query is done.
func TestJetStreamSinkOnCluster(t *testing.T) {
	f := clustertest.NewFixture(t, 2000)
	ctx, c, nc := natsCluster(t, f)
	query := strings.Replace(clustertest.Query, "SELECT s.site", "CREATE SINK counts TO JETSTREAM 'out.counts' FORMAT JSON;\nINSERT INTO counts\nSELECT s.site", 1)
	var log bytes.Buffer
	if err := c.RunScript(ctx, filepath.Join(f.Dir, "js.sql"), query, cluster.ScriptOptions{Log: &log, Stdout: io.Discard}); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if qs := c.Coordinator.Queries(); len(qs) != 1 || qs[0].State != deploy.StateFinished {
		t.Fatalf("the INSERT did not run on the cluster: %+v\n%s", qs, log.String())
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	name, err := js.StreamNameBySubject(ctx, "out.counts")
	if err != nil {
		t.Fatal(err)
	}
	cons, err := js.OrderedConsumer(ctx, name, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for {
		m, err := cons.Next(jetstream.FetchMaxWait(2 * time.Second))
		if err != nil {
			t.Fatalf("after %d rows: %v", len(rows), err)
		}
		if m.Headers().Get(connectors.EndHeader) != "" {
			break
		}
		rows = append(rows, string(m.Data()))
	}
	if err := clustertest.SameRows(jsonToCSV(t, rows), f.Want); err != nil {
		t.Fatal(err)
	}
}

// A final LIMIT over an endless NATS stream ends the query on the cluster:
// the worker that holds the limit asks the coordinator to stop the sources,
// and the run returns with the rows it wanted.
func TestFinalLimitStopsClusterStream(t *testing.T) {
	f := clustertest.NewFixture(t, 10)
	ctx, c, nc := natsCluster(t, f)
	pubCtx, stopPub := context.WithCancel(ctx)
	defer stopPub()
	go func() {
		for i := 0; pubCtx.Err() == nil; i++ {
			_ = nc.Publish("live.readings", []byte(fmt.Sprintf(`{"sensor": %d, "temperature": 21.5}`, i)))
			time.Sleep(2 * time.Millisecond)
		}
	}()
	src := `CREATE STREAM live (sensor INT, temperature DOUBLE) FROM NATS 'live.readings' FORMAT JSON;
SELECT sensor, temperature FROM live LIMIT 3;`
	var out bytes.Buffer
	err := c.RunScript(ctx, filepath.Join(f.Dir, "limit.sql"), src, cluster.ScriptOptions{Stdout: io.Discard,
		NewOutput: func() (sinks.Writer, error) { return sinks.NewCSV(&out), nil }})
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("the limit did not end the stream")
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 4 { // header + 3 rows
		t.Fatalf("output:\n%s", out.String())
	}
}

// natsCluster starts an embedded cluster of f's infrastructure (placed by
// rules) and a client connection to its server; both close with the test.
func natsCluster(t testing.TB, f clustertest.Fixture) (context.Context, *cluster.Cluster, *nats.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: f.Infra, Heartbeat: 100 * time.Millisecond, Placement: coordinator.PlaceRules})
	t.Cleanup(func() { c.Close() })
	nc, err := nats.Connect(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return ctx, c, nc
}
