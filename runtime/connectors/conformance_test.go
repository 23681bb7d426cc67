package connectors_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/connectors"
)

// The shared suite: every registered (kind, format) passes every case.

func startServer(t testing.TB) *natsserver.Server {
	t.Helper()
	s, err := natsserver.Start(natsserver.Options{JetStream: true, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

func connect(t testing.TB, s *natsserver.Server) *nats.Conn {
	t.Helper()
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// checkFor polls fn until it returns nil or total has passed.
func checkFor(t *testing.T, total time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var readingsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "sensor", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
	{Name: "temperature", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "humidity", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// readings loads the example file as records of batch rows.
func readings(t *testing.T, mem memory.Allocator, batch int) []arrow.Record {
	t.Helper()
	r, err := sources.OpenCSV(filepath.Join("..", "..", "examples", "streaming", "readings.csv"), readingsSchema, batch, sources.Fail, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []arrow.Record
	for {
		rec, err := r.Next(mem)
		if err != nil {
			t.Fatal(err)
		}
		if rec == nil {
			return out
		}
		out = append(out, rec)
	}
}

func csvText(t *testing.T, recs []arrow.Record) string {
	t.Helper()
	var b bytes.Buffer
	w := sinks.NewCSV(&b)
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	return b.String()
}

// textWriter collects what a source emitted as CSV text; gate, if set, holds
// the first write until it is closed.
type textWriter struct {
	mu   sync.Mutex
	w    *sinks.CSV
	buf  bytes.Buffer
	rows int
	gate chan struct{}
}

func newTextWriter() *textWriter {
	t := &textWriter{}
	t.w = sinks.NewCSV(&t.buf)
	return t
}

func (t *textWriter) Write(rec arrow.Record) error {
	if t.gate != nil {
		<-t.gate
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rows += int(rec.NumRows())
	return t.w.Write(rec)
}

func (t *textWriter) Close() error { return nil }

func (t *textWriter) Rows() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rows
}

func (t *textWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}

// runSource runs source -> writer in the background; the returned function
// waits for the run's end.
func runSource(t testing.TB, mem memory.Allocator, mk func() (dataflow.Operator, error), out sinks.Writer, stop <-chan struct{}) func() error {
	t.Helper()
	g := &dataflow.Graph{Query: "t"}
	src := g.AddOperator(dataflow.OperatorSpec{Name: "source", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return mk() }})
	snk := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
		return sinks.NewSink(out, nil, nil), nil
	}})
	g.Connect(src, 0, snk, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	done := make(chan error, 1)
	go func() { done <- dataflow.Run(ctx, g, dataflow.Config{Allocator: mem, Stop: stop, QueueLen: 2}) }()
	return func() error {
		defer cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(15 * time.Second):
			return errors.New("source did not end")
		}
	}
}

// waitSubscribed waits until the server has interest in subject (a core
// NATS source is subscribed; a JetStream consumer exists).
func waitSubscribed(t *testing.T, s *natsserver.Server, nc *nats.Conn, kind, subject string) {
	t.Helper()
	checkFor(t, 5*time.Second, func() error {
		if kind == connectors.NATS {
			if s.NATS().GlobalAccount().SubscriptionInterest(subject) {
				return nil
			}
			return fmt.Errorf("no subscriber on %q", subject)
		}
		js, _ := jetstream.New(nc)
		name, err := js.StreamNameBySubject(context.Background(), subject)
		if err != nil {
			return err
		}
		st, err := js.Stream(context.Background(), name)
		if err != nil {
			return err
		}
		if st.CachedInfo().State.Consumers == 0 {
			return fmt.Errorf("no consumer on %s", name)
		}
		return nil
	})
}

func eachConnector(t *testing.T, fn func(t *testing.T, c connectors.Component)) {
	reg := connectors.Builtins()
	if n := len(reg.Components()); n != 6 {
		t.Fatalf("%d connectors registered, want 6 (nats, jetstream x arrow, json, csv)", n)
	}
	for _, c := range reg.Components() {
		t.Run(c.Kind+"/"+c.Format, func(t *testing.T) { fn(t, c) })
	}
}

// TestConformanceRoundTrip: a file through sink -> subject -> source gives
// the same rows in the same order.
func TestConformanceRoundTrip(t *testing.T) {
	s := startServer(t)
	eachConnector(t, func(t *testing.T, c connectors.Component) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		nc := connect(t, s)
		subject := "rt." + c.Kind + "." + c.Format
		recs := readings(t, mem, 300)
		defer func() {
			for _, r := range recs {
				r.Release()
			}
		}()
		report := &sources.Report{}
		stats := &connectors.Stats{}
		mk, err := c.NewSource(connectors.SourceConfig{Conn: nc, Subject: subject, Schema: readingsSchema, MaxRows: 256,
			OnError: sources.Fail, Report: report, Stats: stats, EventTime: sources.EventTime{Column: 1, MaxDelay: 2 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		out := newTextWriter()
		wait := runSource(t, mem, mk, out, nil)
		waitSubscribed(t, s, nc, c.Kind, subject)
		w, err := c.NewSink(connectors.SinkConfig{Conn: connect(t, s), Subject: subject, End: true, Window: 8})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := wait(); err != nil {
			t.Fatal(err)
		}
		if got, want := out.String(), csvText(t, recs); got != want {
			t.Fatalf("round trip differs: got %d bytes, want %d\n%.300s\nwant\n%.300s", len(got), len(want), got, want)
		}
		if report.Rows.Load() != 1200 || stats.Bad.Load() != 0 {
			t.Fatalf("rows %d bad %d", report.Rows.Load(), stats.Bad.Load())
		}
	})
}

// TestConformanceReadsOnlyItsColumns: a source asked for some of its
// stream's declared columns (a query's, exec.Options.Stream) emits those,
// found by name (JSON, Arrow) or by position (CSV), with the values a
// source of every column has in them.
func TestConformanceReadsOnlyItsColumns(t *testing.T) {
	s := startServer(t)
	eachConnector(t, func(t *testing.T, c connectors.Component) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		nc := connect(t, s)
		subject := "cols." + c.Kind + "." + c.Format
		recs := readings(t, mem, 100)
		// ts (the event time) and humidity, in declared order.
		cols := []int{1, 3}
		narrow := arrow.NewSchema([]arrow.Field{readingsSchema.Field(1), readingsSchema.Field(3)}, nil)
		var want []arrow.Record
		for _, r := range recs {
			want = append(want, array.NewRecord(narrow, []arrow.Array{r.Column(1), r.Column(3)}, r.NumRows()))
		}
		defer func() {
			for _, r := range append(recs, want...) {
				r.Release()
			}
		}()
		report := &sources.Report{}
		mk, err := c.NewSource(connectors.SourceConfig{Conn: nc, Subject: subject, Schema: narrow, Columns: cols, Declared: 4, MaxRows: 64,
			OnError: sources.Fail, Report: report, EventTime: sources.EventTime{Column: 0, MaxDelay: 2 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		out := newTextWriter()
		wait := runSource(t, mem, mk, out, nil)
		waitSubscribed(t, s, nc, c.Kind, subject)
		w, err := c.NewSink(connectors.SinkConfig{Conn: connect(t, s), Subject: subject, End: true, Window: 8})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := wait(); err != nil {
			t.Fatal(err)
		}
		if got, want := out.String(), csvText(t, want); got != want {
			t.Fatalf("narrowed read differs: got %d bytes, want %d\n%.300s\nwant\n%.300s", len(got), len(want), got, want)
		}
		if report.Rows.Load() != 1200 {
			t.Fatalf("rows %d, want 1200", report.Rows.Load())
		}
	})
	// A position past the declared columns is refused before anything
	// connects.
	_, err := connectors.Builtins().Components()[0].NewSource(connectors.SourceConfig{Conn: connect(t, s), Subject: "x",
		Schema: readingsSchema, Columns: []int{0, 1, 2, 4}, Declared: 4})
	if !errors.Is(err, connectors.ErrConfig) {
		t.Fatalf("position 4 of 4 declared: %v, want ErrConfig", err)
	}
}

// badMessage is a message no format reads as a row of readingsSchema.
var badMessages = map[string][]string{
	"json":  {`not json`, `{"sensor": "x"}`},
	"csv":   {`1,2`, `x,2024-05-01 08:00:00,1,2`},
	"arrow": {`garbage`, ``},
}

// TestConformanceMalformedSkipped: bad messages are counted and skipped and
// the good ones go on; with sources.Fail the first one stops the source.
func TestConformanceMalformedSkipped(t *testing.T) {
	s := startServer(t)
	eachConnector(t, func(t *testing.T, c connectors.Component) {
		for _, policy := range []sources.OnError{sources.Skip, sources.Fail} {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			nc := connect(t, s)
			subject := fmt.Sprintf("bad.%s.%s.%d", c.Kind, c.Format, policy)
			recs := readings(t, mem, 10)
			report := &sources.Report{}
			mk, err := c.NewSource(connectors.SourceConfig{Conn: nc, Subject: subject, Schema: readingsSchema, MaxRows: 4, OnError: policy, Report: report, EventTime: sources.EventTime{Column: -1}})
			if err != nil {
				t.Fatal(err)
			}
			out := newTextWriter()
			wait := runSource(t, mem, mk, out, nil)
			waitSubscribed(t, s, nc, c.Kind, subject)
			pub := connect(t, s)
			w, err := c.NewSink(connectors.SinkConfig{Conn: pub, Subject: subject, End: true})
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range recs[:3] {
				if err := w.Write(r); err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					for _, b := range badMessages[c.Format] {
						if c.Kind == connectors.NATS {
							err = pub.Publish(subject, []byte(b))
						} else {
							js, _ := jetstream.New(pub)
							_, err = js.Publish(context.Background(), subject, []byte(b))
						}
						if err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			err = wait()
			if policy == sources.Fail {
				if !errors.Is(err, sources.ErrBadRow) && !errors.Is(err, connectors.ErrBadMessage) {
					t.Fatalf("fail policy: got %v, want a bad row or message error", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if got := report.BadRows.Load(); got != int64(len(badMessages[c.Format])) {
					t.Fatalf("%d bad messages counted, want %d (%v)", got, len(badMessages[c.Format]), report.Messages())
				}
				if want := csvText(t, recs[:3]); out.String() != want {
					t.Fatalf("good rows: got\n%s\nwant\n%s", out.String(), want)
				}
				if msgs := report.Messages(); len(msgs) == 0 || !strings.Contains(msgs[0], subject) {
					t.Fatalf("reports do not name the subject: %v", msgs)
				}
			}
			for _, r := range recs {
				r.Release()
			}
			mem.AssertSize(t, 0)
		}
	})
}

// TestConformanceBackpressureBounded: while the consumer is blocked, what a
// source holds stays bounded: JetStream stops delivering at MaxAckPending
// (and loses nothing), core NATS drops beyond its pending limit and counts
// the drops.
func TestConformanceBackpressureBounded(t *testing.T) {
	s := startServer(t)
	eachConnector(t, func(t *testing.T, c connectors.Component) {
		if c.Format != "json" {
			t.Skip("flow control is the transport's: one format per transport suffices")
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		nc := connect(t, s)
		subject := "bp." + c.Kind
		const maxAck, published, pending = 16, 400, 20
		stats := &connectors.Stats{}
		// Batches bigger than MaxAckPending: a JetStream source fills up to
		// the server's limit and waits out MaxDelay. A core NATS source's
		// batches are small, so that what it can hold while blocked is well
		// below what is published (natsHeld).
		maxRows := 1000
		if c.Kind == connectors.NATS {
			maxRows = 10
		}
		mk, err := c.NewSource(connectors.SourceConfig{Conn: nc, Subject: subject, Schema: readingsSchema, MaxRows: maxRows, MaxDelay: 50 * time.Millisecond,
			MaxAckPending: maxAck, PendingMsgs: pending, OnError: sources.Fail, Stats: stats, EventTime: sources.EventTime{Column: -1}})
		if err != nil {
			t.Fatal(err)
		}
		out := newTextWriter()
		out.gate = make(chan struct{})
		stop := make(chan struct{})
		wait := runSource(t, mem, mk, out, stop)
		waitSubscribed(t, s, nc, c.Kind, subject)
		recs := readings(t, mem, 1)
		w, err := c.NewSink(connectors.SinkConfig{Conn: connect(t, s), Subject: subject})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs[:published] {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			r.Release()
		}
		if c.Kind == connectors.JetStream {
			js, _ := jetstream.New(nc)
			name, _ := js.StreamNameBySubject(context.Background(), subject)
			checkFor(t, 5*time.Second, func() error {
				st, err := js.Stream(context.Background(), name)
				if err != nil {
					return err
				}
				for ci := range st.ListConsumers(context.Background()).Info() {
					if ci.NumAckPending > maxAck {
						t.Fatalf("%d messages unacknowledged, max %d", ci.NumAckPending, maxAck)
					}
					if ci.NumAckPending == maxAck && ci.NumPending > 0 {
						return nil
					}
					return fmt.Errorf("ack pending %d, pending %d", ci.NumAckPending, ci.NumPending)
				}
				return errors.New("no consumer")
			})
			close(out.gate)
			checkFor(t, 10*time.Second, func() error {
				if n := out.Rows(); n != published {
					return fmt.Errorf("%d rows after release, want all %d", n, published)
				}
				return nil
			})
		} else {
			// Every message has reached the source's connection (each one
			// is pending, handed to the source or dropped) before the
			// writer lets go: on a loaded machine the server may still be
			// delivering when the publisher is done, and a source let go
			// meanwhile takes the rest without a drop.
			checkFor(t, 10*time.Second, func() error {
				if n := nc.Stats().InMsgs; n < published {
					return fmt.Errorf("%d of %d messages delivered to the source's connection", n, published)
				}
				return nil
			})
			close(out.gate)
		}
		close(stop)
		if err := wait(); err != nil {
			t.Fatal(err)
		}
		if c.Kind == connectors.NATS {
			// The blocked source holds its subscription's pending limit,
			// the message its handler waits with, the handler's queue and
			// the messages it took from it (a batch's worth each), and a
			// batch in each place the engine holds one: the one it builds,
			// the queue's two (QueueLen) and the sink's, held by the
			// writer. Everything else drops.
			natsHeld := int64(pending + 1 + 2*maxRows + 4*maxRows)
			received, dropped := stats.Messages.Load(), stats.Dropped.Load()
			t.Logf("received %d, dropped %d of %d (at most %d held)", received, dropped, published, natsHeld)
			if dropped < published-natsHeld || received+dropped > published || int64(out.Rows()) > received {
				t.Fatalf("received %d, dropped %d, emitted %d of %d: want at most %d held by the blocked source, the rest dropped and counted",
					received, dropped, out.Rows(), published, natsHeld)
			}
		}
	})
}
