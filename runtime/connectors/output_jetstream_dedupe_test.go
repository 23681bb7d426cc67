package connectors_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/runtime/connectors"
)

// TestJetStreamSinkDedupesAReplayedEpoch: two generations of one query
// write the same result at the same epoch through JetStream sinks with the
// query's id prefix; the stream holds it once, while equal rows of one
// epoch and rows of a query with another id all stay.
func TestJetStreamSinkDedupesAReplayedEpoch(t *testing.T) {
	nc, mem, c := jetStreamTest(t, "json")
	schema := arrow.NewSchema([]arrow.Field{{Name: "site", Type: arrow.BinaryTypes.String}}, nil)
	row := func(v string) arrow.Record {
		b := array.NewStringBuilder(mem)
		defer b.Release()
		b.Append(v)
		col := b.NewArray()
		defer col.Release()
		return array.NewRecord(schema, []arrow.Array{col}, 1)
	}
	write := func(prefix string, rows ...any) {
		w, err := c.NewSink(connectors.SinkConfig{Conn: nc, Subject: "dd.out", IDPrefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		ew := w.(sinks.EpochWriter)
		for i := 0; i < len(rows); i += 2 {
			rec := row(rows[i+1].(string))
			if err := ew.WriteEpoch(0, dataflow.Epoch(rows[i].(int)), rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write("q1", 10, "a", 10, "b", 20, "c") // generation 0, stopped after epoch 20
	write("q1", 20, "c", 30, "d", 30, "d") // generation 1 resumes at 20: "c" again
	write("q2", 10, "a")                   // another query
	js := newJetStream(t, nc, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	name, err := js.StreamNameBySubject(ctx, "dd.out")
	if err != nil {
		t.Fatal(err)
	}
	cons, err := js.OrderedConsumer(ctx, name, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		m, err := cons.Next(jetstream.FetchMaxWait(500 * time.Millisecond))
		if err != nil {
			break
		}
		got = append(got, strings.TrimSpace(string(m.Data())))
	}
	want := []string{`{"site":"a"}`, `{"site":"b"}`, `{"site":"c"}`, `{"site":"d"}`, `{"site":"d"}`, `{"site":"a"}`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("stream holds %q, want %q", got, want)
	}
}
