package nexmark

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A join of two streams runs as several instances on a cluster, each input
// hash-exchanged by its own equi-join columns, and answers row for row as
// the local executor's one instance over the same partitioned files: q4
// (a regular join under the BETWEEN's time bounds, its GROUP BY A.id,
// A.category fused after it without a second exchange, its GROUP BY
// category exchanged), q5 (a join of two window aggregations on the
// windows' times: its two equal HOP counts built once, the count read by
// both consumers, and the highest count per window, one row per window,
// aggregated in two phases and broadcast to the counts where they are),
// q7 (bids joined with each window's highest price by price: the highest
// prices broadcast to the bids, which never cross), and two joins of an INT key with a BIGINT one, a regular and a
// window join: each side's key is hashed by its value, so equal keys of
// different widths meet in one instance.
func TestJoinsSplitOverWorkersAnswerAsOneInstance(t *testing.T) {
	_, parts := partitioned(t)
	bid32 := fmt.Sprintf("CREATE STREAM bid32 (auction INT, bidder INT, price INT, channel VARCHAR, url VARCHAR, dateTime TIMESTAMP, extra VARCHAR) FROM FILE '%s' FORMAT CSV;\n", filepath.Join(parts, "bid-*.csv"))
	qs := []struct {
		q Query
		// exchanges are what EXPLAIN must show the join's instances take.
		exchanges []string
		// twice, when set, is a line's end EXPLAIN must show twice.
		twice string
	}{
		{q: mustLookup(t, "q4"), exchanges: []string{"scan auction: the keys whose hash of id mod 3 is 2", "scan bid: the keys whose hash of auction mod 3 is 2", "from 3 filter: its instance 2's rows", "project: the keys whose hash of category mod 3 is 2"}},
		{q: mustLookup(t, "q5"), exchanges: []string{"from 0 scan bid: the keys whose hash of auction mod 3 is 2",
			"from 4 partial aggregate: the keys whose hash of starttime, endtime mod 3 is 2",
			"from 2 project: its instance 2's rows; from 7 project: every row"},
			// One scan and one count of the bids: both projections read it.
			twice: "from 1 aggregate: its instance 2's rows"},
		{q: mustLookup(t, "q7"), exchanges: []string{"from 0 scan bid: its instance 2's rows; from 5 project: every row",
			"from 1 scan bid: its instance 2's rows", "from 2 partial aggregate: the keys whose hash of window_start, window_end mod 3 is 2"}},
		{q: Query{Name: "int-bigint", Text: bid32 + `SELECT A.id, A.category, B.bidder, B.price FROM auction A JOIN bid32 B
ON A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires;`}, exchanges: []string{"scan auction: the keys whose hash of id mod 3 is 2", "scan bid32: the keys whose hash of auction mod 3 is 2"}},
		{q: Query{Name: "int-bigint-window", Text: bid32 + `SELECT B.auction, count(*) AS bids, max(B.price) AS top FROM bid32 B JOIN auction A
ON B.auction = A.id AND TUMBLE(B.dateTime, INTERVAL '10' SECOND) = TUMBLE(A.dateTime, INTERVAL '10' SECOND)
GROUP BY B.auction;`}, exchanges: []string{"scan bid32: the keys whose hash of auction mod 3 is 2", "scan auction: the keys whose hash of id mod 3 is 2"}},
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
			// The plan's join stage shows the three workers its instances
			// run on, a third of the traffic each (not the optimizer's one).
			for _, want := range append([]string{"join", "  2         w-3", "worker w-3 (core, cloud): 33.3% of traffic"}, c.exchanges...) {
				if !strings.Contains(plan, want) {
					t.Errorf("EXPLAIN on 3 workers lacks %q:\n%s", want, plan)
				}
			}
			if n := strings.Count(plan, c.twice); c.twice != "" && n != 2 {
				t.Errorf("EXPLAIN on 3 workers has %q %d times, want 2:\n%s", c.twice, n, plan)
			}
			want := answer(t, parts, c.q, Options{BatchSize: 500, Partitioned: true})
			if len(want) == 0 {
				t.Fatalf("%s answers nothing locally", c.q.Name)
			}
			answersOnEach(ctx, t, clusters, parts, c.q, want)
		})
	}
}

// answersOnEach runs q on each cluster over parts and fails t unless each
// answers want, row for row.
func answersOnEach(ctx context.Context, t *testing.T, clusters []*Cluster, parts string, q Query, want []string) {
	t.Helper()
	for _, cl := range clusters {
		res, err := cl.Run(ctx, parts, q, Options{Keep: true, BatchSize: 500})
		if err != nil {
			t.Fatal(err)
		}
		if got := settle(t, res.Rows); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s on %d workers: %d rows, want %d\n%s", q.Name, cl.Workers, len(got), len(want), FirstDifference(got, want))
		}
	}
}

func mustLookup(t *testing.T, name string) Query {
	t.Helper()
	q, ok := Lookup(name)
	if !ok {
		t.Fatalf("no query %s", name)
	}
	return q
}

// A join of two streams of one partition each still splits when its
// stage's estimated demand is over one worker's capacity for it: the
// optimizer then gives the stage two workers (at 30,000 items/s against
// 20,000 a worker, lower.RelationalLatencyMs), and the join's inputs are
// hash-exchanged by their join columns, where the stage's traffic shares
// once dealt whole batches to each (and a bid could miss its auction).
// At 1,000 items/s it runs once.
func TestJoinSplitsWhenItsRateNeedsTwoWorkers(t *testing.T) {
	dir := data(t)
	parts, err := Partition(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := StartCluster(ctx, ClusterOptions{Workers: 2, Heartbeat: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, rate := range []int{1000, 30000} {
		q := Query{Name: fmt.Sprintf("rate-%d", rate), Text: fmt.Sprintf(`CREATE STREAM a2 (id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT, dateTime TIMESTAMP, expires TIMESTAMP, seller BIGINT, category BIGINT, extra VARCHAR) FROM FILE '%s' FORMAT CSV RATE %d PER SECOND;
CREATE STREAM b2 (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, dateTime TIMESTAMP, extra VARCHAR) FROM FILE '%s' FORMAT CSV RATE %d PER SECOND;
SELECT A.id, A.category, B.bidder, B.price FROM a2 A JOIN b2 B ON A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires;`,
			filepath.Join(dir, "auction.csv"), rate, filepath.Join(dir, "bid.csv"), rate)}
		plan, err := c.Explain(ctx, parts, q)
		if err != nil {
			t.Fatal(err)
		}
		split := strings.Contains(plan, "join (two streams)  1         w-2") && strings.Contains(plan, "scan b2: the keys whose hash of auction mod 2 is 1")
		if split != (rate > 20000) {
			t.Fatalf("at %d items/s the join splits: %v\n%s", rate, split, plan)
		}
		want := answer(t, dir, q, Options{BatchSize: 500})
		res, err := c.Run(ctx, parts, q, Options{Keep: true, BatchSize: 500})
		if err != nil {
			t.Fatal(err)
		}
		if got := settle(t, res.Rows); len(want) == 0 || strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("at %d items/s: %d rows, want %d as locally\n%s", rate, len(got), len(want), FirstDifference(got, want))
		}
	}
}
