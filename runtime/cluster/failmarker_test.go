package cluster_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/connectors"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// TestFailedQueryMarksItsNATSSinkFailed: a query that fails part-way ends
// its NATS sink with a failure marker (Tierflow-Failed: reason), never the
// end marker; a raw subscriber sees the reason, and a tierflow query
// reading the subject fails with ErrUpstream instead of finishing on a
// partial result.
func TestFailedQueryMarksItsNATSSinkFailed(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	srv := clustertest.NATSServer(t)
	nc := clustertest.Connect(t, srv)
	dir := t.TempDir()
	// Row 3 does not fit: the writing query fails there (--on-error fail).
	os.WriteFile(filepath.Join(dir, "r.csv"), []byte("k\n1\n2\nnot-a-number\n4\n"), 0o644)
	hooks := func(policy sources.OnError) exec.Options {
		nh := connectors.Hooks{Conn: func() (*nats.Conn, error) { return nc, nil },
			Sources: connectors.SourceConfig{OnError: policy}, Sinks: connectors.SinkConfig{End: true}}
		return exec.Options{Allocator: mem, Stream: nh.Stream, Sink: nh.Sink, BaseDir: dir, BatchSize: 1, OnError: policy}
	}
	raw, err := nc.SubscribeSync("fail.out")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// The reader: a tierflow query over the failing query's sink.
	ro := hooks(sources.Fail)
	ro.Output = sinks.NewCSV(&strings.Builder{})
	reader, _, err := deploy.Script{Filename: "reader.sql", Source: "CREATE STREAM o (k BIGINT) FROM NATS 'fail.out' FORMAT JSON;\nSELECT k FROM o;\n"}.Build(nil, ro)
	if err != nil {
		t.Fatal(err)
	}
	readErr := make(chan error, 1)
	go func() { _, err := reader.Run(ctx); readErr <- err }()
	clustertest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if srv.NATS().GlobalAccount().Interest("fail.out") < 2 {
			return errors.New("the reader has not subscribed yet")
		}
		return nil
	})

	writer, _, err := deploy.Script{Filename: "writer.sql", Source: "CREATE STREAM r (k BIGINT) FROM FILE 'r.csv' FORMAT CSV;\n" +
		"CREATE SINK o TO NATS 'fail.out' FORMAT JSON;\nINSERT INTO o SELECT k FROM r;\n"}.Build(nil, hooks(sources.Fail))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Run(ctx); err == nil {
		t.Fatal("the writing query did not fail on its bad row")
	}

	// The raw subscriber: data, then the failure marker, and no end marker.
	for {
		m, err := raw.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("no failure marker on the sink's subject: %v", err)
		}
		if m.Header.Get(connectors.EndHeader) != "" {
			t.Fatal("a failed query published the end marker")
		}
		if reason := m.Header.Get(connectors.FailedHeader); reason != "" {
			if !strings.Contains(reason, "r.csv") {
				t.Errorf("failure reason %q does not say what failed", reason)
			}
			break
		}
	}
	if err := <-readErr; !errors.Is(err, connectors.ErrUpstream) {
		t.Fatalf("the reading query ended with %v, want ErrUpstream", err)
	}
}

// TestFailedClusterQueryMarksItsNATSSinkFailed: the same on the embedded
// cluster, where the worker holding the sink ends it.
func TestFailedClusterQueryMarksItsNATSSinkFailed(t *testing.T) {
	f := clustertest.NewFixture(t, 50)
	ctx, c, nc := natsCluster(t, f)
	os.WriteFile(filepath.Join(f.Dir, "r.csv"), []byte("k\n1\n2\nnot-a-number\n4\n"), 0o644)
	raw, err := nc.SubscribeSync("fail.out")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	script := deploy.Script{Filename: filepath.Join(f.Dir, "w.sql"), BaseDir: f.Dir, Source: "CREATE STREAM r (k BIGINT) FROM FILE 'r.csv' FORMAT CSV;\n" +
		"CREATE SINK o TO NATS 'fail.out' FORMAT JSON;\nINSERT INTO o SELECT k FROM r;\n"}
	_, err = c.Run(ctx, script, sinks.NewCSV(&strings.Builder{}))
	if err == nil {
		t.Fatal("the writing query did not fail on its bad row")
	}
	t.Logf("the writing query failed: %v", err)
	for {
		m, err := raw.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("no failure marker on the sink's subject: %v", err)
		}
		if m.Header.Get(connectors.EndHeader) != "" {
			t.Fatal("a failed query published the end marker")
		}
		if m.Header.Get(connectors.FailedHeader) != "" {
			return
		}
	}
}
