package ingest

import (
	"context"
	"testing"
	"time"
)

// Every consumer takes every message of a small run (too few to overflow
// a subscription), and the engine's rates are measured beside the bare
// consumers'.
func TestEveryConsumerTakesEveryMessage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := Run(ctx, Options{Messages: testMessages, Reps: 2, BatchSize: 512})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(consumers) {
		t.Fatalf("%d rows, want %d", len(rows), len(consumers))
	}
	for _, r := range rows {
		if r.Received != int64(testMessages) || r.PerSec <= 0 || r.VsBare <= 0 || r.CPUPerMsg <= 0 {
			t.Errorf("%s, %s: received %d of %d, %.0f/s, %.2f of bare, %.2f us/msg", r.Transport, r.Consumer, r.Received, testMessages, r.PerSec, r.VsBare, r.CPUPerMsg)
		}
		if r.Transport == "core NATS" && r.VsDecoding <= 0 {
			t.Errorf("%s, %s: no ratio to the decoding bare subscriber", r.Transport, r.Consumer)
		}
	}
}

// The held-out shapes decode whole, in the engine and in the bare
// subscriber's encoding/json, over core NATS.
func TestEveryShapeIsReadOverCoreNATS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, sh := range shapes {
		rows, err := Run(ctx, Options{Messages: 1000, Reps: 1, BatchSize: 256, Shape: sh.name, Transport: "core"})
		if err != nil {
			t.Fatalf("%s: %v", sh.name, err)
		}
		for _, r := range rows {
			if r.Received != 1000 {
				t.Errorf("%s: %s received %d of 1000", sh.name, r.Consumer, r.Received)
			}
		}
	}
}

func TestUnknownShapeOrTransportIsRefused(t *testing.T) {
	if _, err := Run(context.Background(), Options{Messages: 10, Reps: 1, BatchSize: 8, Shape: "huge"}); err == nil {
		t.Error("shape huge accepted")
	}
	if _, err := Run(context.Background(), Options{Messages: 10, Reps: 1, BatchSize: 8, Transport: "kafka"}); err == nil {
		t.Error("transport kafka accepted")
	}
}

var testMessages = 3000

// BenchmarkIngest runs the consumers over 50,000 bids, each turn in this
// process, and reports the engine's rate over the fastest bare consumer's
// on each transport (core_vs_bare, js_vs_bare: the Done-when's 0.8 and
// 0.6) and over the decoding bare subscriber's (core_vs_decoding).
// -cpuprofile shows where the engine's turns go.
func BenchmarkIngest(b *testing.B) {
	for range b.N {
		rows, err := Run(context.Background(), Options{Messages: 50_000, Reps: 1, BatchSize: 4096})
		if err != nil {
			b.Fatal(err)
		}
		reportEngine(b, rows)
	}
}

// BenchmarkIngestCore is BenchmarkIngest's core NATS turns alone, 3 pairs
// of 200,000 bids a run: what -cpuprofile of the engine's core path reads.
func BenchmarkIngestCore(b *testing.B) {
	for range b.N {
		rows, err := Run(context.Background(), Options{Messages: 200_000, Reps: 3, BatchSize: 4096, Transport: "core"})
		if err != nil {
			b.Fatal(err)
		}
		reportEngine(b, rows)
	}
}

func reportEngine(b *testing.B, rows []Row) {
	for _, r := range rows {
		if r.Consumer != "engine" {
			continue
		}
		if r.Transport == "JetStream" {
			b.ReportMetric(r.VsBare, "js_vs_bare")
			continue
		}
		b.ReportMetric(r.VsBare, "core_vs_bare")
		b.ReportMetric(r.VsDecoding, "core_vs_decoding")
		b.ReportMetric(r.CPUPerMsg, "core_cpu_us/msg")
	}
}

// A consumer that lost the end marker ends its turn at its last message,
// not up to a quiet later: its count stops moving 100 ms after the start,
// and the turn measures about that (the count is read after it moved, so
// never less; a busy machine's late polls may add, but not a quiet's
// second: the bound is well under it).
func TestLossyTurnEndsAtItsLastMessage(t *testing.T) {
	start := time.Now()
	count := func() int64 {
		if d := time.Since(start); d < 100*time.Millisecond {
			return int64(d / time.Millisecond)
		}
		return 100
	}
	r, err := turn{done: make(chan error), count: count}.wait(context.Background(), start, true)
	if err != nil {
		t.Fatal(err)
	}
	if r.received != 100 || r.elapsed < 100*time.Millisecond || r.elapsed > quiet/2 {
		t.Fatalf("received %d in %v, want 100 in about 100 ms", r.received, r.elapsed)
	}
}
