package connectors_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/runtime/connectors"
)

// TestJetStreamDurableResumesAndReplaysFromSequence: a durable consumer
// acknowledges what it emitted, so a second run with the same name goes on
// after it; an ephemeral consumer replays from a given sequence.
func TestJetStreamDurableResumesAndReplaysFromSequence(t *testing.T) {
	nc, mem, c := jetStreamTest(t, "csv")
	js := newJetStream(t, nc, "DUR", "dur.>")
	ctx := context.Background()
	pub := func(body string, end bool) {
		m := nats.NewMsg("dur.in")
		m.Data = []byte(body)
		if end {
			m.Header.Set(connectors.EndHeader, "1")
		}
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	row := func(i int) string {
		return strings.Join([]string{string(rune('0' + i)), "2024-05-01 08:00:00", "20.5", "50"}, ",")
	}
	// seq 1..3 rows, 4 end, 5..7 rows, 8 end
	for i := 1; i <= 3; i++ {
		pub(row(i), false)
	}
	pub("", true)
	for i := 5; i <= 7; i++ {
		pub(row(i), false)
	}
	pub("", true)

	read := func(cfg connectors.SourceConfig) string {
		cfg.Conn, cfg.Subject, cfg.Schema, cfg.OnError, cfg.EventTime = nc, "dur.in", readingsSchema, sources.Fail, sources.EventTime{Column: -1}
		mk, err := c.NewSource(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return sensorsRead(t, mem, mk)
	}
	if got := read(connectors.SourceConfig{Durable: "d1"}); got != "1 2 3" {
		t.Fatalf("durable, first run: %q", got)
	}
	if got := read(connectors.SourceConfig{Durable: "d1"}); got != "5 6 7" {
		t.Fatalf("durable, second run resumes after the acknowledged: %q", got)
	}
	if got := read(connectors.SourceConfig{StartSeq: 6}); got != "6 7" {
		t.Fatalf("ephemeral from sequence 6: %q", got)
	}
	if got := read(connectors.SourceConfig{Stream: "DUR"}); got != "1 2 3" {
		t.Fatalf("ephemeral from the start: %q", got)
	}
}
