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
		if r.Received != int64(testMessages) || r.PerSec <= 0 || r.VsBare <= 0 {
			t.Errorf("%s, %s: received %d of %d, %.0f/s, %.2f of bare", r.Transport, r.Consumer, r.Received, testMessages, r.PerSec, r.VsBare)
		}
	}
}

var testMessages = 3000

// BenchmarkIngest runs the four consumers over 50,000 bids, each turn in
// this process, and reports the engine's rate over the bare consumer's on
// each transport (core_vs_bare, js_vs_bare: the Done-when's 0.8 and 0.6).
// -cpuprofile shows where the engine's turns go.
func BenchmarkIngest(b *testing.B) {
	for range b.N {
		rows, err := Run(context.Background(), Options{Messages: 50_000, Reps: 1, BatchSize: 4096})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range rows {
			if r.Consumer != "engine" {
				continue
			}
			name := "core_vs_bare"
			if r.Transport == "JetStream" {
				name = "js_vs_bare"
			}
			b.ReportMetric(r.VsBare, name)
		}
	}
}
