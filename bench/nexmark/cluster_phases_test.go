package nexmark

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A windowed aggregation without a key over a partitioned stream runs in
// two phases (operators/exec windowPhases): a partial aggregation on each
// partition's instance, and a merge of the partial rows exchanged by
// window, in place of one instance taking every row. Its answer is the
// one-phase aggregation's over the same events in one file, row for row,
// locally and on 1 and 3 workers: TUMBLE and HOP, count, sum, avg of an
// integer, min and max, and a join on the result (q7's shape). A DOUBLE's
// sum merges inexactly and stays in one phase.
func TestWindowedAggregationInTwoPhasesAnswersAsOnePhase(t *testing.T) {
	dir, parts := partitioned(t)
	qs := []struct {
		q      Query
		phases bool
	}{
		{Query{Name: "tumble", Text: `SELECT count(*) AS n, sum(price) AS s, avg(price) AS a, min(price) AS lo, max(price) AS hi, window_start, window_end
FROM bid GROUP BY TUMBLE(dateTime, INTERVAL '0.1' SECOND);`}, true},
		{Query{Name: "hop", Text: `SELECT count(bidder) AS n, max(price) AS hi, window_start
FROM bid GROUP BY HOP(dateTime, INTERVAL '0.2' SECOND, INTERVAL '0.05' SECOND);`}, true},
		{Query{Name: "q7-short", Text: `SELECT B.auction, B.price, B.bidder, B.dateTime
FROM bid B JOIN (
  SELECT MAX(price) AS maxprice, window_end AS dateTime FROM bid GROUP BY TUMBLE(dateTime, INTERVAL '0.1' SECOND)
) B1 ON B.price = B1.maxprice
WHERE B.dateTime BETWEEN B1.dateTime - INTERVAL '0.1' SECOND AND B1.dateTime;`}, true},
		{Query{Name: "double-sum", Text: `SELECT sum(CAST(price AS DOUBLE)) AS s, window_start
FROM bid GROUP BY TUMBLE(dateTime, INTERVAL '0.1' SECOND);`}, false},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	clusters := oneAndThreeWorkers(ctx, t)
	for _, c := range qs {
		t.Run(c.q.Name, func(t *testing.T) {
			plan, err := clusters[1].Explain(ctx, parts, c.q)
			if err != nil {
				t.Fatal(err)
			}
			split := partialOnEach.MatchString(plan) && strings.Contains(plan, "partial aggregate: the keys whose hash of window_start, window_end mod 3 is 2")
			if split != c.phases {
				t.Fatalf("in two phases: %v, want %v\n%s", split, c.phases, plan)
			}
			want := answer(t, dir, c.q, Options{BatchSize: 500})
			if len(want) < 10 {
				t.Fatalf("%s answers %d rows in one file, want windows to compare", c.q.Name, len(want))
			}
			if got := answer(t, parts, c.q, Options{BatchSize: 500, Partitioned: true}); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("locally over 3 partitions: %d rows, want %d as over one file\n%s", len(got), len(want), FirstDifference(got, want))
			}
			answersOnEach(ctx, t, clusters, parts, c.q, want)
		})
	}
}

// partialOnEach matches EXPLAIN's line of a partial aggregation's third
// instance, on the third worker, taking that worker's partition's rows.
var partialOnEach = regexp.MustCompile(`partial aggregate +2 +w-3 +cloud +from \d+ scan bid: its instance 2's rows`)
