package nexmark

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Scale counts what the workers' relay connections carry through the NATS
// server per run: q4's join exchanges the bids by auction, so on 3 workers,
// one partition each, about two bids in three cross to another worker, at
// least their 8-byte auction key each; on 1 worker nothing is exchanged and
// the relay carries at most the sink's few rows and the progress.
func TestScaleCountsWhatCrossesBetweenWorkers(t *testing.T) {
	dir, parts := partitioned(t)
	var q4 Query
	for _, q := range Queries {
		if q.Name == "q4" {
			q4 = q
		}
	}
	if q4.Name == "" {
		t.Fatal("no q4 among the queries")
	}
	b, err := os.ReadFile(filepath.Join(dir, "bid.csv"))
	if err != nil {
		t.Fatal(err)
	}
	bids := bytes.Count(b, []byte("\n")) - 1
	const events = 20_000
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rows, err := Scale(ctx, parts, 3, []Query{q4}, ScaleOptions{Events: events, Workers: []int{1, 3}, Reps: 1})
	if err != nil {
		t.Fatal(err)
	}
	one, three := rows[0], rows[1]
	if !three.Same {
		t.Fatalf("q4 on 3 workers answered other rows than on 1")
	}
	// Per million events: bytes / events.
	least := float64(bids) / 3 * 8 / events
	if three.RelayMB < least {
		t.Errorf("q4 on 3 workers: the relay carried %.3f MB per M events, less than a third of the %d bids' auction keys (%.3f)", three.RelayMB, bids, least)
	}
	if three.RelayMsgs == 0 || three.OtherMB == 0 {
		t.Errorf("q4 on 3 workers: %v relay messages, %v MB of control per M events: want both counted", three.RelayMsgs, three.OtherMB)
	}
	if one.RelayMB >= three.RelayMB/4 {
		t.Errorf("q4 on 1 worker: the relay carried %.3f MB per M events, on 3 %.3f: nothing is exchanged on one", one.RelayMB, three.RelayMB)
	}
}
