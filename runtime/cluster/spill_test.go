package cluster_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// TestAGroupByAndAJoinSpillUnderTheQueryLimit: on a cluster, a query's
// memory limit (tierflow coordinator --max-query-memory) makes a GROUP BY
// and a join of two tables spill to disk past half of it, as `run --local
// --memory-limit` does, an ORDER BY sort in runs on disk and an OVER put
// its rows on disk by partition, instead of failing the query: before, a
// GROUP BY of 200,000 groups, a self-join, an ORDER BY and an OVER of
// 400,000 rows failed under 8 MiB with "over its memory limit". The GROUP BY runs on as many instances as
// without a limit (under the rules, one a worker, its rows exchanged by
// key), each spilling its share. The rows in flight are bounded too, as an
// operator who sets a tight memory limit would: 16 batches an inbox of
// 4096 rows are 2 MiB.
func TestAGroupByAndAJoinSpillUnderTheQueryLimit(t *testing.T) {
	const rows, keys = 400_000, 200_000
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("id,k\n")
	for i := range rows {
		fmt.Fprintf(&b, "%d,%d\n", i, i%keys)
	}
	if err := os.WriteFile(filepath.Join(dir, "events.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	inf := twoEdgeWorkers(t)
	table := "CREATE TABLE e (id BIGINT, k BIGINT) FROM FILE 'events.csv' FORMAT CSV;\n"
	group := deploy.Script{Filename: filepath.Join(dir, "group.sql"), BaseDir: dir,
		Source: table + "SELECT k, count(*) AS n, sum(id) AS s FROM e GROUP BY k;\n"}
	join := deploy.Script{Filename: filepath.Join(dir, "join.sql"), BaseDir: dir,
		Source: table + "SELECT count(*) AS n, sum(b.k) AS s FROM e a JOIN e b ON a.id = b.id;\n"}
	order := deploy.Script{Filename: filepath.Join(dir, "order.sql"), BaseDir: dir,
		Source: table + "SELECT id, k FROM e ORDER BY k DESC, id;\n"}
	over := deploy.Script{Filename: filepath.Join(dir, "over.sql"), BaseDir: dir,
		Source: table + "SELECT count(*) AS n, max(r) AS r, sum(r) AS s FROM (SELECT row_number() OVER (PARTITION BY k % 10 ORDER BY id) AS r FROM e) x;\n"}
	for _, placement := range []string{coordinator.PlaceOptimizer, coordinator.PlaceRules} {
		t.Run(placement, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			free := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: inf, Placement: placement, Heartbeat: 200 * time.Millisecond})
			unlimited, err := free.Run(ctx, group, sinks.NewCSV(&strings.Builder{}))
			free.Close()
			if err != nil {
				t.Fatal(err)
			}
			c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: inf, Placement: placement, Heartbeat: 200 * time.Millisecond,
				Limits: deploy.Limits{MemoryBytes: 8 << 20, RowsInFlight: 1024}})
			defer c.Close()

			out := &strings.Builder{}
			info, err := c.Run(ctx, group, sinks.NewCSV(out))
			if err != nil {
				t.Fatalf("GROUP BY of %d groups under 8 MiB: %v", keys, err)
			}
			recs, err := csv.NewReader(strings.NewReader(out.String())).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != keys+1 {
				t.Fatalf("GROUP BY: %d rows, want %d groups", len(recs)-1, keys)
			}
			seen := make([]bool, keys)
			for _, r := range recs[1:] {
				k, _ := strconv.Atoi(r[0])
				if k < 0 || k >= keys || seen[k] || r[1] != "2" || r[2] != strconv.Itoa(2*k+keys) {
					t.Fatalf("GROUP BY: row %v, want k once, n 2, s %d", r, 2*k+keys)
				}
				seen[k] = true
			}
			if n, want := aggregateInstances(info), aggregateInstances(unlimited); n != want || placement == coordinator.PlaceRules && n != 2 {
				t.Errorf("GROUP BY ran as %d instances, %d without a limit: %+v", n, want, info.Placement.Operators)
			}

			out.Reset()
			if _, err := c.Run(ctx, join, sinks.NewCSV(out)); err != nil {
				t.Fatalf("a join of %d rows with itself under 8 MiB: %v", rows, err)
			}
			// Every id matches itself once; the k of ids 0..rows-1 sum to
			// twice 0+1+...+(keys-1).
			if want := fmt.Sprintf("n,s\n%d,%d\n", rows, keys*(keys-1)); out.String() != want {
				t.Fatalf("join: %q, want %q", out.String(), want)
			}

			out.Reset()
			if _, err := c.Run(ctx, order, sinks.NewCSV(out)); err != nil {
				t.Fatalf("ORDER BY of %d rows under 8 MiB: %v", rows, err)
			}
			recs, err = csv.NewReader(strings.NewReader(out.String())).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != rows+1 {
				t.Fatalf("ORDER BY: %d rows, want %d", len(recs)-1, rows)
			}
			// k descending, then id: k = keys-1-i/2 and id = k, k+keys.
			for i, r := range recs[1:] {
				k := keys - 1 - i/2
				if id := k + i%2*keys; r[0] != strconv.Itoa(id) || r[1] != strconv.Itoa(k) {
					t.Fatalf("ORDER BY: row %d is %v, want %d,%d", i, r, id, k)
				}
			}

			// Ten partitions of rows/10: row numbers 1..rows/10 in each.
			out.Reset()
			if _, err := c.Run(ctx, over, sinks.NewCSV(out)); err != nil {
				t.Fatalf("OVER (PARTITION BY k %% 10) of %d rows under 8 MiB: %v", rows, err)
			}
			per := rows / 10
			if want := fmt.Sprintf("n,r,s\n%d,%d,%d\n", rows, per, 10*per*(per+1)/2); out.String() != want {
				t.Fatalf("OVER: %q, want %q", out.String(), want)
			}
		})
	}
}

// aggregateInstances is how many instances the query's GROUP BY ran as.
func aggregateInstances(q deploy.QueryInfo) int {
	for _, op := range q.Placement.Operators {
		if strings.HasPrefix(op.Name, "aggregate") {
			return len(op.Workers)
		}
	}
	return 0
}
