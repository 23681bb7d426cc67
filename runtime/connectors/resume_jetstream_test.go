package connectors_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/runtime/connectors"
)

// TestJetStreamResumesAtRecordedPosition: a JetStream source records, per
// batch, the stream sequence it starts at and the largest event time before
// it; a source told to resume at one of those positions reads the stream
// from that sequence on, not from its start.
func TestJetStreamResumesAtRecordedPosition(t *testing.T) {
	nc, mem, c := jetStreamTest(t, "csv")
	js := newJetStream(t, nc, "POS", "pos.in")
	ctx := context.Background()
	base := time.Date(2024, 5, 1, 8, 0, 0, 0, time.UTC)
	ts := func(i int) int64 { return base.Add(time.Duration(i) * time.Second).UnixMicro() }
	// Message i (stream sequence i) holds sensor i at base + i s.
	for i := 1; i <= 10; i++ {
		m := nats.NewMsg("pos.in")
		m.Data = []byte(fmt.Sprintf("%d,%s,20.5,50", i, base.Add(time.Duration(i)*time.Second).Format("2006-01-02 15:04:05")))
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	end := nats.NewMsg("pos.in")
	end.Header.Set(connectors.EndHeader, "1")
	if _, err := js.PublishMsg(ctx, end); err != nil {
		t.Fatal(err)
	}
	read := func(report *sources.Report, at *sources.Position) string {
		cfg := connectors.SourceConfig{Conn: nc, Subject: "pos.in", Schema: readingsSchema, OnError: sources.Fail,
			EventTime: sources.EventTime{Column: 1}, Name: "readings", Report: report, MaxRows: 1}
		mk, err := c.NewSource(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if at != nil {
			inner := mk
			mk = func() (dataflow.Operator, error) {
				op, err := inner()
				if err == nil {
					op.(interface{ ResumeAt(sources.Position) }).ResumeAt(*at)
				}
				return op, err
			}
		}
		return sensorsRead(t, mem, mk)
	}
	report := &sources.Report{}
	if got := read(report, nil); got != "1 2 3 4 5 6 7 8 9 10" {
		t.Fatalf("first run: %q", got)
	}
	ps := report.TakePositions()["readings"]
	if len(ps) != 10 || ps[0] != (sources.Position{Seq: 1, MaxTS: math.MinInt64}) || ps[9] != (sources.Position{Seq: 10, MaxTS: ts(9)}) {
		t.Fatalf("positions %+v, want one per message, each after the one before it", ps)
	}
	// A window starting at base + 6 s needs messages 6.. (the last
	// position with nothing at or after 6 s before it).
	p, ok := ps.Before(ts(6))
	if !ok || p != (sources.Position{Seq: 6, MaxTS: ts(5)}) {
		t.Fatalf("Before(6 s) = %+v, %v", p, ok)
	}
	again := &sources.Report{}
	if got := read(again, &p); got != "6 7 8 9 10" {
		t.Fatalf("resumed at %+v: %q, want the stream from sequence 6", p, got)
	}
	// The resumed source goes on recording from where it started.
	if ps := again.TakePositions()["readings"]; len(ps) != 5 || ps[0] != p {
		t.Fatalf("resumed positions %+v, want 5 from %+v", ps, p)
	}
}
