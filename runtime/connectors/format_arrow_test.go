package connectors_test

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/connectors"
)

// TestArrowChunksToTheMaxPayload: a record larger than the server's max
// payload crosses as several messages and arrives whole, cast to the
// stream's INT column.
func TestArrowChunksToTheMaxPayload(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s, err := natsserver.Start(natsserver.Options{MaxPayload: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	nc := connect(t, s)
	c, err := connectors.Builtins().Lookup("NATS", "ipc")
	if err != nil {
		t.Fatal(err)
	}
	recs := readings(t, mem, 1200)
	defer recs[0].Release()
	int32Schema := arrow.NewSchema(append([]arrow.Field{{Name: "sensor", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, readingsSchema.Fields()[1:]...), nil)
	stats := &connectors.Stats{}
	mk, err := c.NewSource(connectors.SourceConfig{Conn: nc, Subject: "big", Schema: int32Schema, OnError: sources.Fail, Stats: stats, EventTime: sources.EventTime{Column: -1}})
	if err != nil {
		t.Fatal(err)
	}
	out := newTextWriter()
	wait := runSource(t, mem, mk, out, nil)
	waitSubscribed(t, s, nc, connectors.NATS, "big")
	w, err := c.NewSink(connectors.SinkConfig{Conn: connect(t, s), Subject: "big", End: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(recs[0]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), csvText(t, recs); got != want {
		t.Fatalf("chunked round trip differs:\n%.200s\nwant\n%.200s", got, want)
	}
	if stats.Messages.Load() < 8 {
		t.Fatalf("%d messages for a ~40 KB record under a 4 KB limit", stats.Messages.Load())
	}

}
