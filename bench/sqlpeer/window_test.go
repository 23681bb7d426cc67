package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/sinks"
)

// windowFeatures are the window function (OVER) comparisons, over the
// feature data set (t: 40 rows with NULLs and ties in g, x and n; ev: a
// stream of 240 readings, 250 ms apart). ROWS frames and row_number order by
// (key, id), so that peers have one order on both engines.
var windowFeatures = []feature{
	// Ranking: ties (g has repeats), NULLs (last in both directions, as
	// DuckDB orders them), a NULL partition.
	{kind: "rank", sql: `SELECT id, g, n, rank() OVER (ORDER BY n), dense_rank() OVER (ORDER BY n DESC), row_number() OVER (ORDER BY n, id) FROM t`},
	{kind: "rank", sql: `SELECT id, rank() OVER (PARTITION BY g ORDER BY x DESC), dense_rank() OVER (PARTITION BY g ORDER BY x), row_number() OVER (PARTITION BY g ORDER BY x DESC, id) FROM t`},
	{kind: "rank", sql: `SELECT id, rank() OVER (), dense_rank() OVER (PARTITION BY n), row_number() OVER (PARTITION BY n ORDER BY id DESC) FROM t`},
	{kind: "percent_rank", sql: `SELECT id, percent_rank() OVER (ORDER BY x), cume_dist() OVER (ORDER BY x), percent_rank() OVER (PARTITION BY g ORDER BY n DESC), cume_dist() OVER (PARTITION BY g ORDER BY n DESC) FROM t`},
	{kind: "percent_rank", sql: `SELECT id, percent_rank() OVER (PARTITION BY id ORDER BY x), cume_dist() OVER (PARTITION BY n) FROM t`},
	{kind: "ntile", sql: `SELECT id, ntile(3) OVER (ORDER BY id), ntile(4) OVER (PARTITION BY g ORDER BY id), ntile(100) OVER (PARTITION BY n ORDER BY id DESC) FROM t`},
	{kind: "ntile", sql: `SELECT id, ntile(1) OVER (ORDER BY id), ntile(7) OVER (ORDER BY x, id) FROM t`},

	// lag and lead: offsets, defaults, NULL values, partition edges.
	{kind: "lag/lead", sql: `SELECT id, lag(x) OVER (ORDER BY id), lead(x) OVER (ORDER BY id), lag(x, 3) OVER (ORDER BY id), lead(n, 2, -1) OVER (ORDER BY id) FROM t`},
	{kind: "lag/lead", sql: `SELECT id, lag(s, 1, 'none') OVER (PARTITION BY g ORDER BY id), lead(ts) OVER (PARTITION BY g ORDER BY id DESC), lag(id, 0) OVER (ORDER BY id) FROM t`},
	{kind: "lag/lead", sql: `SELECT id, lag(x, 1, n) OVER (PARTITION BY n IS NULL ORDER BY id), lead(id, 100) OVER (ORDER BY id) FROM t`},

	// first_value, last_value, nth_value: the default frame ends at the
	// last peer; explicit frames.
	{kind: "first/last/nth", sql: `SELECT id, first_value(x) OVER (PARTITION BY g ORDER BY id), last_value(x) OVER (PARTITION BY g ORDER BY id), nth_value(x, 2) OVER (PARTITION BY g ORDER BY id) FROM t`},
	{kind: "first/last/nth", sql: `SELECT id, last_value(id) OVER (ORDER BY n, id), last_value(n) OVER (ORDER BY n), first_value(id) OVER (ORDER BY n DESC, id), nth_value(s, 3) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) FROM t`},
	{kind: "first/last/nth", sql: `SELECT id, first_value(n) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING), last_value(n) OVER (ORDER BY id ROWS BETWEEN 1 FOLLOWING AND 3 FOLLOWING), nth_value(n, 2) OVER (ORDER BY id ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING) FROM t`},

	// Aggregates over DuckDB's default frames: running with ORDER BY (peers
	// included), the whole partition without.
	{kind: "window sum/count", sql: `SELECT id, sum(n) OVER (ORDER BY id), count(x) OVER (ORDER BY id), count(*) OVER (), sum(x) OVER (PARTITION BY g) FROM t`},
	{kind: "window sum/count", sql: `SELECT id, sum(n) OVER (PARTITION BY g ORDER BY n), count(*) OVER (PARTITION BY g ORDER BY n), avg(x) OVER (PARTITION BY g ORDER BY n) FROM t`},
	{kind: "window min/max", sql: `SELECT id, min(x) OVER (ORDER BY id), max(s) OVER (PARTITION BY g), min(ts) OVER (PARTITION BY g ORDER BY id), max(n) OVER (ORDER BY x DESC) FROM t`},
	{kind: "window avg", sql: `SELECT id, avg(n) OVER (), avg(x) OVER (PARTITION BY n ORDER BY id), avg(x) OVER (PARTITION BY g ORDER BY x DESC) FROM t`},

	// Explicit ROWS and RANGE frames: sliding, following, empty frames,
	// frames past the partition's edges.
	{kind: "rows frame", sql: `SELECT id, sum(x) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), avg(n) OVER (ORDER BY id ROWS 3 PRECEDING), min(x) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), max(x) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND 4 FOLLOWING) FROM t`},
	{kind: "rows frame", sql: `SELECT id, count(x) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), sum(n) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING), max(n) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN 2 FOLLOWING AND 5 FOLLOWING) FROM t`},
	{kind: "rows frame", sql: `SELECT id, sum(x) OVER (ORDER BY id ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING), min(s) OVER (ORDER BY id DESC ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING) FROM t`},
	{kind: "range frame", sql: `SELECT id, n, sum(x) OVER (ORDER BY n RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING), count(*) OVER (ORDER BY n RANGE BETWEEN CURRENT ROW AND 2 FOLLOWING), max(id) OVER (ORDER BY n DESC RANGE BETWEEN 2 PRECEDING AND CURRENT ROW) FROM t`},
	{kind: "range frame", sql: `SELECT id, sum(n) OVER (ORDER BY x RANGE BETWEEN 2.5 PRECEDING AND CURRENT ROW), avg(n) OVER (PARTITION BY g ORDER BY x RANGE BETWEEN UNBOUNDED PRECEDING AND 1 FOLLOWING), min(id) OVER (ORDER BY x RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) FROM t`},
	{kind: "range frame", sql: `SELECT id, count(*) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '30' DAY PRECEDING AND CURRENT ROW), sum(n) OVER (PARTITION BY g ORDER BY ts RANGE BETWEEN INTERVAL '60' DAY PRECEDING AND INTERVAL '1' DAY FOLLOWING) FROM t`},

	// NULLS FIRST and LAST in a window's order (fixed-width and string keys,
	// RANGE offsets around the NULLs).
	{kind: "nulls order", sql: `SELECT id, rank() OVER (ORDER BY n NULLS FIRST), rank() OVER (ORDER BY n DESC NULLS FIRST), dense_rank() OVER (PARTITION BY g ORDER BY s DESC NULLS FIRST), row_number() OVER (ORDER BY g NULLS FIRST, id DESC) FROM t`},
	{kind: "nulls order", sql: `SELECT id, sum(x) OVER (ORDER BY n NULLS FIRST RANGE BETWEEN 1 PRECEDING AND CURRENT ROW), count(*) OVER (ORDER BY x DESC NULLS FIRST RANGE BETWEEN 2 PRECEDING AND 1 FOLLOWING), first_value(id) OVER (ORDER BY n NULLS LAST, id) FROM t`},

	// Any aggregate over a frame (frame by frame, or growing by merging),
	// DISTINCT included.
	{kind: "other aggregates", sql: `SELECT id, median(x) OVER (PARTITION BY g), stddev_samp(x) OVER (ORDER BY id ROWS BETWEEN 3 PRECEDING AND 1 FOLLOWING), var_pop(n) OVER (ORDER BY n), count(DISTINCT g) OVER (ORDER BY id) FROM t`},
	{kind: "other aggregates", sql: `SELECT id, quantile_cont(x, 0.25) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), median(n) OVER (ORDER BY x RANGE BETWEEN 2 PRECEDING AND 2 FOLLOWING), sum(DISTINCT n) OVER (PARTITION BY g ORDER BY id) FROM t`},
	{kind: "other aggregates", sql: `SELECT g, stddev(sum(x)) OVER (), median(count(*)) OVER (ORDER BY g) FROM t GROUP BY g`},

	// With CTEs and subqueries: top 2 per group, windows over a CTE.
	{kind: "cte/subquery", sql: `WITH r AS (SELECT id, g, x, row_number() OVER (PARTITION BY g ORDER BY x DESC, id) AS rn FROM t WHERE x IS NOT NULL) SELECT g, id, x FROM r WHERE rn <= 2`},
	{kind: "cte/subquery", sql: `SELECT id, x - (SELECT avg(x) FROM t), rank() OVER (ORDER BY x DESC) FROM t WHERE n IN (SELECT k FROM u)`},

	// Named windows.
	{kind: "named window", sql: `SELECT id, sum(x) OVER w, rank() OVER w, lag(id) OVER w2 FROM t WINDOW w AS (PARTITION BY g ORDER BY n), w2 AS (ORDER BY id)`},

	// Over a grouping: windows see the groups (after HAVING); aggregates in
	// their arguments and ORDER BY.
	{kind: "window over groups", sql: `SELECT g, sum(x), rank() OVER (ORDER BY sum(x) DESC), sum(sum(x)) OVER (), count(*) * 100.0 / sum(count(*)) OVER () FROM t GROUP BY g`},
	{kind: "window over groups", sql: `SELECT n, count(*) AS c, row_number() OVER (ORDER BY count(*) DESC, n), lag(n) OVER (ORDER BY n) FROM t GROUP BY n HAVING count(*) > 1`},
	// ORDER BY a window function, and a window in an expression.
	{kind: "window order", ordered: true, sql: `SELECT id, x, x - avg(x) OVER (PARTITION BY g) AS dev FROM t WHERE x IS NOT NULL ORDER BY rank() OVER (ORDER BY x DESC, id), id LIMIT 10`},
	// A WHERE that leaves nothing: no partitions at all.
	{kind: "empty input", empty: true, sql: `SELECT id, rank() OVER (ORDER BY x), sum(x) OVER () FROM t WHERE id < 0`},
	// DISTINCT over window results.
	{kind: "distinct window", sql: `SELECT DISTINCT g, count(*) OVER (PARTITION BY g) FROM t`},

	// Streams: Flink's OVER aggregation, one output per reading, over a
	// bounded frame of event time; the same rows as DuckDB's window over
	// the whole file (the readings are in order, so none is late).
	{kind: "stream over", sql: `SELECT ts, sensor, sum(value) OVER (PARTITION BY sensor ORDER BY ts RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW), count(value) OVER (PARTITION BY sensor ORDER BY ts RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW) FROM ev`},
	{kind: "stream over", sql: `SELECT ts, avg(value) OVER (ORDER BY ts ROWS BETWEEN 5 PRECEDING AND CURRENT ROW), min(value) OVER (PARTITION BY sensor ORDER BY ts ROWS BETWEEN 3 PRECEDING AND CURRENT ROW), max(value) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW) FROM ev`},
	// From the partition's start (the default frame, and ROWS UNBOUNDED
	// PRECEDING): a running aggregate per partition across watermarks.
	{kind: "stream over", sql: `SELECT ts, sensor, count(*) OVER (PARTITION BY sensor ORDER BY ts), sum(value) OVER (PARTITION BY sensor ORDER BY ts), avg(value) OVER (ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), min(value) OVER (PARTITION BY sensor ORDER BY ts), max(value) OVER (ORDER BY ts) FROM ev`},
	// DuckDB's interval spellings, FILTER, and an expression over the
	// window's value, per reading.
	{kind: "stream over", sql: `SELECT ts, sensor, sum(value) OVER (PARTITION BY sensor ORDER BY ts RANGE BETWEEN INTERVAL '5 seconds' PRECEDING AND CURRENT ROW), count(*) FILTER (WHERE value > 50) OVER (PARTITION BY sensor ORDER BY ts RANGE BETWEEN INTERVAL 3 SECONDS PRECEDING AND CURRENT ROW) FROM ev`},
	{kind: "stream over", sql: `SELECT ts, sensor, value - avg(value) OVER (PARTITION BY sensor ORDER BY ts ROWS BETWEEN 3 PRECEDING AND CURRENT ROW), max(value) FILTER (WHERE sensor <> 2) OVER (ORDER BY ts ROWS BETWEEN 7 PRECEDING AND CURRENT ROW) FROM ev WHERE value IS NOT NULL`},
	// Per window: row_number Top-N, string_agg in event-time order, FILTER
	// and the boolean aggregates.
	{kind: "stream per window", sql: `SELECT window_start, sensor, count(*) AS c, row_number() OVER (ORDER BY count(*) DESC, sensor) AS rn FROM ev GROUP BY sensor, TUMBLE(ts, INTERVAL '10' SECOND)`,
		duckdb: `SELECT time_bucket(INTERVAL '10 seconds', ts) AS ws, sensor, count(*) AS c, row_number() OVER (PARTITION BY time_bucket(INTERVAL '10 seconds', ts) ORDER BY count(*) DESC, sensor) FROM ev GROUP BY sensor, ws`},
	{kind: "stream per window", sql: `SELECT window_start, sensor, string_agg(CAST(value AS VARCHAR), ',' ORDER BY ts DESC) FROM ev GROUP BY sensor, TUMBLE(ts, INTERVAL '5' SECOND)`,
		duckdb: `SELECT time_bucket(INTERVAL '5 seconds', ts) AS ws, sensor, string_agg(CAST(value AS VARCHAR), ',' ORDER BY ts DESC) FROM ev GROUP BY ALL`},
	{kind: "stream per window", sql: `SELECT window_start, count_if(value > 50), bool_or(value > 99), max(value) FILTER (WHERE sensor = 1) FROM ev GROUP BY TUMBLE(ts, INTERVAL '15 seconds')`,
		duckdb: `SELECT time_bucket(INTERVAL '15 seconds', ts) AS ws, count_if(value > 50), bool_or(value > 99), max(value) FILTER (WHERE sensor = 1) FROM ev GROUP BY ALL`},
	// A stream joined to a table in FROM ... WHERE.
	{kind: "stream comma join", sql: `SELECT ts, sensor, value, label FROM ev, u WHERE ev.sensor = u.k AND value > 40`},
	// Per window of a windowed aggregation (Flink's window Top-N).
	{kind: "stream per window", sql: `SELECT window_start, sensor, count(*) AS c, rank() OVER (ORDER BY count(*) DESC) AS r, sum(count(*)) OVER () AS total FROM ev GROUP BY sensor, TUMBLE(ts, INTERVAL '10' SECOND)`,
		duckdb: `SELECT time_bucket(INTERVAL '10 seconds', ts) AS ws, sensor, count(*) AS c, rank() OVER (PARTITION BY time_bucket(INTERVAL '10 seconds', ts) ORDER BY count(*) DESC), sum(count(*)) OVER (PARTITION BY time_bucket(INTERVAL '10 seconds', ts)) FROM ev GROUP BY sensor, ws`},
}

// TestWindowsMatchDuckDB runs every window function query on both engines
// over the feature data set and requires the same answers.
func TestWindowsMatchDuckDB(t *testing.T) {
	duck, err := newDuckEngine()
	if err != nil {
		t.Fatal(err)
	}
	defer duck.close()
	dir := t.TempDir()
	if err := writeFeatureData(dir); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := featureViews(ctx, duck, dir); err != nil {
		t.Fatal(err)
	}
	for i, f := range windowFeatures {
		t.Run(fmt.Sprintf("%02d %s", i, f.kind), func(t *testing.T) {
			d := f.duckdb
			if d == "" {
				d = f.sql
			}
			want, err := duck.run(ctx, query{duckdb: d}, dir)
			if err != nil {
				t.Fatalf("DuckDB: %v\n%s", err, d)
			}
			if len(want) == 0 && !f.empty {
				t.Errorf("DuckDB returns no rows: the case tests nothing\n%s", d)
			}
			// Parallel aggregation below the window operator must not
			// change its answer.
			for _, par := range []int{0, 3} {
				c := &collector{}
				err = exec.RunScript(ctx, "windows.sql", featureScript(dir, f.sql), exec.ScriptOptions{
					// Small batches: a stream's watermark moves many times,
					// so OVER emits in many steps and carries state across them.
					Options:   exec.Options{BaseDir: dir, BatchSize: 16, Parallelism: par},
					NewOutput: func() (sinks.Writer, error) { return c, nil },
				})
				if err != nil {
					t.Fatalf("tierflow (parallelism %d): %v\n%s", par, err, f.sql)
				}
				if diff := compare(query{ordered: f.ordered}, c.rows, want); diff != "" {
					t.Errorf("parallelism %d: %s\n%s\ntierflow: %v\nDuckDB:   %v", par, diff, f.sql, c.rows, want)
				}
			}
		})
	}
}
