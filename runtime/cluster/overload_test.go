package cluster_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/connectors"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// gatedWriter is a result sink that takes nothing until opened: a consumer
// slower than its stream.
type gatedWriter struct {
	open chan struct{}
	rows atomic.Int64
}

func (g *gatedWriter) Write(rec arrow.Record) error {
	<-g.open
	g.rows.Add(rec.NumRows())
	return nil
}

func (g *gatedWriter) Close() error { return nil }

// TestOverloadedNATSSourceCountsEveryDrop overloads a core NATS source on a
// real embedded server: the result sink stalls, the pipeline's bounded
// queues fill, the subscription's buffer overflows and the client drops
// messages. Every message published is then either delivered to the sink
// or counted as a slow_consumer drop in the query's stats: produced ==
// delivered + dropped, exactly.
func TestOverloadedNATSSourceCountsEveryDrop(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	srv := clustertest.NATSServer(t)
	nc := clustertest.Connect(t, srv)
	out := &gatedWriter{open: make(chan struct{})}
	nh := connectors.Hooks{Conn: func() (*nats.Conn, error) { return nc, nil },
		Sources: connectors.SourceConfig{MaxRows: 16, PendingMsgs: 64, OnError: sources.Fail}}
	eo := exec.Options{Allocator: mem, Output: out, Stream: nh.Stream, Sink: nh.Sink, BatchSize: 16}
	script := deploy.Script{Filename: "q.sql", Source: "CREATE STREAM s (n BIGINT) FROM NATS 'overload.in' FORMAT JSON;\nSELECT n FROM s;\n"}
	q, _, err := script.Build(nil, eo)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type result struct {
		st  exec.Stats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := q.Run(ctx)
		done <- result{st, err}
	}()
	clustertest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if n := srv.NATS().GlobalAccount().Interest("overload.in"); n < 1 {
			return fmt.Errorf("no subscriber yet")
		}
		return nil
	})
	const produced = 20000
	pub := clustertest.Connect(t, srv)
	for i := range produced {
		if err := pub.Publish("overload.in", fmt.Appendf(nil, `{"n": %d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(); err != nil {
		t.Fatal(err)
	}
	close(out.open)
	// Whatever was not dropped is read; once every message is accounted
	// for, the end marker cannot be dropped too.
	clustertest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		st := q.Stats()
		if got := st.RowsRead + st.Dropped[dataflow.DropSlowConsumer]; got != produced {
			return fmt.Errorf("%d read + %d dropped of %d", st.RowsRead, st.Dropped[dataflow.DropSlowConsumer], produced)
		}
		return nil
	})
	end := nats.NewMsg("overload.in")
	end.Header.Set(connectors.EndHeader, "1")
	if err := pub.PublishMsg(end); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	delivered, dropped := out.rows.Load(), r.st.Dropped
	if dropped[dataflow.DropSlowConsumer] == 0 {
		t.Fatalf("no slow-consumer drops counted (delivered %d of %d): the test did not overload", delivered, produced)
	}
	if delivered+dropped.Total() != produced {
		t.Fatalf("produced %d != delivered %d + dropped %v", produced, delivered, dropped)
	}
	t.Logf("produced %d = delivered %d + dropped %s", produced, delivered, dropped)
}
