package nexmark

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/internal/testenv"
)

// stateless are the queries that keep nothing across rows: each row
// answers alone, so no watermark, window or key decides anything.
var stateless = map[string]bool{"q0": true, "q1": true, "q2": true, "q10": true, "q14": true, "q21": true, "q22": true}

// Every Nexmark query that keeps state (the windows, the joins of two
// streams, Top-N and dedup, the GROUP BYs) answers on an embedded cluster
// of one worker and of three what the local executor answers over the same
// files: each stream is split into 3 partitions (files) with a watermark
// each, spread over the workers, and every keyed operator's instances
// exchange rows by key over NATS and take the least of their inputs'
// watermarks, so which rows are late, which windows close when and which
// rows a join or a Top-N keeps follow from the data alone. (Over the
// unsplit files a Top-N may break a tie in its ORDER BY otherwise: the
// earlier watermark wins, and one stream's watermarks are not its
// partitions'.) (The
// stateless queries too under make test-long, on 40,000 events; a kill
// mid-query is cmd/tierflow's TestWindowedQueriesSurviveAKill.)
func TestQueriesAnswerAlikeOnOneAndThreeWorkers(t *testing.T) {
	dir := t.TempDir()
	events, long := 4_000, testenv.IsLong()
	if long {
		events = 40_000
	}
	if _, err := Generate(dir, Config{Events: events, Seed: 11, Gap: 3 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	parts, err := Partition(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	clusters := oneAndThreeWorkers(ctx, t)
	for _, q := range Queries {
		if stateless[q.Name] && !long || q.ProcTime {
			continue // a processing-time query answers by when rows pass (TestQ12)
		}
		t.Run(q.Name, func(t *testing.T) {
			want := answer(t, parts, q, Options{BatchSize: 500, Partitioned: true})
			if len(want) == 0 {
				t.Fatalf("%s answers nothing on the generated events", q.Name)
			}
			for _, c := range clusters {
				res, err := c.Run(ctx, parts, q, Options{Keep: true, BatchSize: 500})
				if err != nil {
					t.Fatal(err)
				}
				if got := settle(t, res.Rows); strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Fatalf("%s on %d workers: %d rows, want %d as locally\n%s", q.Name, c.Workers, len(got), len(want), FirstDifference(got, want))
				}
			}
		})
	}
}
