package main

// query is one benchmark query in both dialects. The SQL is the same where
// the dialects agree; the windowed aggregation differs (TUMBLE vs
// time_bucket). ordered says the result's row order is part of the answer;
// otherwise both results are sorted before they are compared.
type query struct {
	name     string
	what     string
	tierflow string
	duckdb   string
	ordered  bool
	format   string // "parquet" or "csv": which files both engines read
}

const tpchQ1 = `SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty,
  sum(l_extendedprice) AS sum_base_price,
  sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
  sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
  avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price, avg(l_discount) AS avg_disc,
  count(*) AS count_order
FROM lineitem
WHERE l_shipdate <= TIMESTAMP '1998-09-02 00:00:00'
GROUP BY l_returnflag, l_linestatus
ORDER BY l_returnflag, l_linestatus`

const tpchQ6 = `SELECT sum(l_extendedprice * l_discount) AS revenue
FROM lineitem
WHERE l_shipdate >= TIMESTAMP '1994-01-01 00:00:00' AND l_shipdate < TIMESTAMP '1995-01-01 00:00:00'
  AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24`

const tpchQ12 = `SELECT l_shipmode,
  sum(CASE WHEN o_orderpriority = '1-URGENT' OR o_orderpriority = '2-HIGH' THEN 1 ELSE 0 END) AS high_line_count,
  sum(CASE WHEN o_orderpriority <> '1-URGENT' AND o_orderpriority <> '2-HIGH' THEN 1 ELSE 0 END) AS low_line_count
FROM lineitem JOIN orders ON l_orderkey = o_orderkey
WHERE (l_shipmode = 'MAIL' OR l_shipmode = 'SHIP')
  AND l_shipdate >= TIMESTAMP '1994-01-01 00:00:00' AND l_shipdate < TIMESTAMP '1995-01-01 00:00:00'
GROUP BY l_shipmode
ORDER BY l_shipmode`

func same(name, what, sql string, ordered bool, format string) query {
	return query{name: name, what: what, tierflow: sql, duckdb: sql, ordered: ordered, format: format}
}

var queries = []query{
	same("filter-agg", "filter + aggregate",
		`SELECT count(*) AS n, sum(l_extendedprice) AS s FROM lineitem WHERE l_quantity < 10 AND l_discount > 0.05`, false, "parquet"),
	same("groupby-many", "group by ~n/5 groups",
		`SELECT l_partkey, sum(l_quantity) AS q, count(*) AS n FROM lineitem GROUP BY l_partkey`, false, "parquet"),
	same("groupby-few", "group by 7 string groups",
		`SELECT l_shipmode, avg(l_extendedprice) AS p, max(l_discount) AS d FROM lineitem GROUP BY l_shipmode`, false, "parquet"),
	same("join", "hash join lineitem x orders",
		`SELECT o_orderpriority, count(*) AS n, sum(l_quantity) AS q FROM lineitem JOIN orders ON l_orderkey = o_orderkey GROUP BY o_orderpriority`, false, "parquet"),
	same("topn", "ORDER BY ... LIMIT 10",
		`SELECT l_orderkey, l_linenumber, l_extendedprice FROM lineitem ORDER BY l_extendedprice DESC, l_orderkey, l_linenumber LIMIT 10`, true, "parquet"),
	{name: "tumble", what: "1-minute tumbling windows x 100 sensors", format: "parquet",
		tierflow: `SELECT window_start, sensor, count(*) AS n, sum(value) AS s FROM events GROUP BY sensor, TUMBLE(ts, INTERVAL '1' MINUTE)`,
		duckdb:   `SELECT time_bucket(INTERVAL 1 MINUTE, ts) AS window_start, sensor, count(*) AS n, sum(value) AS s FROM events GROUP BY ALL`},
	same("tpch-q1", "TPC-H Q1 (pricing summary)", tpchQ1, true, "parquet"),
	same("tpch-q6", "TPC-H Q6 (forecast revenue)", tpchQ6, false, "parquet"),
	same("tpch-q12", "TPC-H Q12 (shipping modes, join)", tpchQ12, true, "parquet"),
	same("rowgroup-skip", "range filter on sorted keys",
		`SELECT count(*) AS n, sum(o_totalprice) AS s FROM orders WHERE o_orderkey BETWEEN 100000 AND 101000`, false, "parquet"),
	same("csv-filter-agg", "filter + aggregate on CSV",
		`SELECT count(*) AS n, sum(l_extendedprice) AS s FROM lineitem WHERE l_quantity < 10 AND l_discount > 0.05`, false, "csv"),
	same("csv-tpch-q6", "TPC-H Q6 on CSV", tpchQ6, false, "csv"),
}
