package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/sinks"
)

// feature is one SQL feature query, run on both engines over the small data
// set below (NULLs in every column that can hold one). duckdb is the DuckDB
// spelling where it differs from tierflow's (a stream's TUMBLE is DuckDB's
// time_bucket); ordered says the row order is part of the answer.
type feature struct {
	kind    string // what the case exercises, for the failure message
	sql     string
	duckdb  string
	ordered bool
	empty   bool // the answer is no rows (otherwise no rows means the case tests nothing)
}

// features is the table of feature comparisons: several queries per SQL
// construct, NULL edge cases included. Add a construct's cases here as it
// lands; every one must give DuckDB's answer.
var features = []feature{
	// Baseline constructs that predate the SQL work, so that a broken data
	// set or harness shows up here first.
	{kind: "baseline", sql: `SELECT id, g, x FROM t WHERE x > 2`},
	{kind: "baseline", sql: `SELECT g, count(*), count(x), sum(n) FROM t GROUP BY g`},
	{kind: "baseline", sql: `SELECT id, label FROM t LEFT JOIN u ON t.n = u.k`},

	// greatest/least skip NULLs and are NULL only when every argument is.
	{kind: "greatest/least", sql: `SELECT id, greatest(x, n), least(x, n) FROM t`},
	{kind: "greatest/least", sql: `SELECT id, greatest(g, s), least(g, 'm') FROM t`},
	{kind: "greatest/least", sql: `SELECT greatest(NULL, NULL) IS NULL, least(3, 1, 2) FROM t WHERE id = 1`},

	// CAST, x::type (tighter than unary minus) and TRY_CAST (NULL where the
	// value does not convert; CAST fails the query there).
	{kind: "cast", sql: `SELECT id, x::INT, -x::BIGINT, n::DOUBLE / 4, CAST(n AS VARCHAR) FROM t`},
	{kind: "cast", sql: `SELECT id, TRY_CAST(s AS BIGINT), TRY_CAST(x AS INT), TRY_CAST(g AS DOUBLE) FROM t`},
	{kind: "cast", sql: `SELECT g, sum(x)::BIGINT, TRY_CAST('12' AS INT) + 1, TRY_CAST('x' AS INT) FROM t GROUP BY g`},

	// ILIKE: LIKE ignoring case; NULL in, NULL out.
	{kind: "ilike", sql: `SELECT id, s ILIKE 'apple%', s NOT ILIKE '%TART', s LIKE 'A%' FROM t`},
	{kind: "ilike", sql: `SELECT id, s FROM t WHERE s ILIKE '%A%' AND g ILIKE 'b'`},
	{kind: "ilike", sql: `SELECT g, count(*) FROM t WHERE s ILIKE '_r%' OR s ILIKE '' GROUP BY g`},

	// IS [NOT] DISTINCT FROM: NULL is a value like any other; never NULL.
	{kind: "distinct from", sql: `SELECT id, g IS DISTINCT FROM 'a', n IS NOT DISTINCT FROM 2, x IS DISTINCT FROM n FROM t`},
	{kind: "distinct from", sql: `SELECT id FROM t WHERE g IS NOT DISTINCT FROM NULL OR n IS DISTINCT FROM x`},
	{kind: "distinct from", sql: `SELECT g, count(*), sum(CASE WHEN n IS DISTINCT FROM 0 THEN 1 ELSE 0 END) FROM t WHERE g IS DISTINCT FROM 'b' GROUP BY g`},

	// EXTRACT(f FROM t) = date_part('f', t), date_trunc, now() (one instant
	// per query, so only comparisons of it are the same on both engines).
	{kind: "extract", sql: `SELECT id, EXTRACT(year FROM ts), EXTRACT(month FROM ts), EXTRACT(day FROM ts), EXTRACT(hour FROM ts), EXTRACT(minute FROM ts), EXTRACT(second FROM ts) FROM t`},
	{kind: "extract", sql: `SELECT id, EXTRACT(millisecond FROM ts), EXTRACT(microsecond FROM ts), EXTRACT(quarter FROM ts), EXTRACT(week FROM ts), EXTRACT(dow FROM ts), EXTRACT(isodow FROM ts), EXTRACT(doy FROM ts) FROM t`},
	{kind: "extract", sql: `SELECT EXTRACT(month FROM ts), count(*) FROM t GROUP BY EXTRACT(month FROM ts)`},
	{kind: "date_part", sql: `SELECT id, date_part('year', ts), date_part('hour', ts), date_part('minute', ts) * 60 + date_part('second', ts) FROM t`},
	{kind: "date_part", sql: `SELECT id, date_part('decade', ts), date_part('century', ts), date_part('dayofweek', ts) FROM t WHERE ts IS NOT NULL`},
	{kind: "date_trunc", sql: `SELECT id, date_trunc('second', ts), date_trunc('minute', ts), date_trunc('hour', ts), date_trunc('day', ts) FROM t`},
	{kind: "date_trunc", sql: `SELECT id, date_trunc('week', ts), date_trunc('month', ts), date_trunc('quarter', ts), date_trunc('year', ts) FROM t`},
	{kind: "date_trunc", sql: `SELECT date_trunc('month', ts), count(*), min(ts) FROM t GROUP BY date_trunc('month', ts)`},
	{kind: "now", sql: `SELECT id, now() > ts, now() = now(), now() > TIMESTAMP '2026-01-01 00:00:00' FROM t`},

	// OFFSET: after ORDER BY (and LIMIT), alone, and past the end.
	{kind: "offset", sql: `SELECT id, x FROM t ORDER BY id LIMIT 5 OFFSET 3`, ordered: true},
	{kind: "offset", sql: `SELECT id FROM t ORDER BY id DESC OFFSET 30`, ordered: true},
	{kind: "offset", sql: `SELECT g, count(*) AS c FROM t GROUP BY g ORDER BY c DESC, g LIMIT 2 OFFSET 1`, ordered: true},
	{kind: "offset", sql: `SELECT id FROM t ORDER BY id LIMIT 3 OFFSET 100`, ordered: true, empty: true},

	// NULLS FIRST/LAST, and DuckDB's default: NULLs last in both directions.
	{kind: "nulls order", sql: `SELECT id, x FROM t ORDER BY x DESC, id`, ordered: true},
	{kind: "nulls order", sql: `SELECT id, x FROM t ORDER BY x NULLS FIRST, id DESC`, ordered: true},
	{kind: "nulls order", sql: `SELECT id, g, n FROM t ORDER BY g DESC NULLS FIRST, n ASC NULLS LAST, id LIMIT 12`, ordered: true},
	{kind: "nulls order", sql: `SELECT g, max(x) AS m FROM t GROUP BY g ORDER BY m DESC NULLS LAST, g NULLS FIRST`, ordered: true},

	// GROUP BY an ordinal or a SELECT alias.
	{kind: "group by ordinal", sql: `SELECT g, count(*), sum(x) FROM t GROUP BY 1`},
	{kind: "group by ordinal", sql: `SELECT n % 3 AS r, upper(g) AS ug, count(x) FROM t GROUP BY 1, 2 ORDER BY 1, 2`, ordered: true},
	{kind: "group by ordinal", sql: `SELECT date_trunc('month', ts) AS m, max(id) FROM t GROUP BY m HAVING count(*) > 1`},

	// stddev/variance (sample and population), median, quantiles, string_agg.
	{kind: "stddev/variance", sql: `SELECT g, stddev(x), stddev_samp(n), stddev_pop(x), variance(n), var_samp(x), var_pop(n) FROM t GROUP BY g`},
	{kind: "stddev/variance", sql: `SELECT stddev(x), variance(x), var_pop(x), count(x) FROM t WHERE id < 3`},
	{kind: "stddev/variance", sql: `SELECT id, stddev(x), var_pop(x) FROM t GROUP BY id`},
	{kind: "median/quantile", sql: `SELECT g, median(x), median(n), quantile_cont(x, 0.25), quantile_cont(n, 0.9) FROM t GROUP BY g`},
	{kind: "median/quantile", sql: `SELECT g, quantile_disc(x, 0.5), quantile_disc(n, 0.9), quantile(n, 0.1), quantile_disc(x, 0), quantile_disc(x, 1) FROM t GROUP BY g`},
	{kind: "median/quantile", sql: `SELECT median(x), quantile_cont(x, 0.75), quantile_cont(x, 1) FROM t WHERE x IS NULL`},
	{kind: "percentile_cont", sql: `SELECT g, percentile_cont(0.5) WITHIN GROUP (ORDER BY x), percentile_cont(0.1) WITHIN GROUP (ORDER BY n DESC), percentile_disc(0.75) WITHIN GROUP (ORDER BY x) FROM t GROUP BY g`},
	{kind: "percentile_cont", sql: `SELECT percentile_cont(0.9) WITHIN GROUP (ORDER BY x), percentile_disc(0.2) WITHIN GROUP (ORDER BY n) FROM t`},
	{kind: "string_agg", sql: `SELECT id, string_agg(s, '|'), string_agg(g) FROM t GROUP BY id`},
	{kind: "string_agg", sql: `SELECT g, length(string_agg(s, ', ')), count(s) FROM t GROUP BY g`},
	{kind: "string_agg", sql: `SELECT string_agg(s, '-') FROM t WHERE s IS NULL`},
	// ... and on a stream, per window.
	{kind: "stats on a stream", sql: `SELECT window_start, sensor, stddev(value), var_pop(value), median(value), quantile_disc(value, 0.9) FROM ev GROUP BY sensor, TUMBLE(ts, INTERVAL '10' SECOND)`,
		duckdb: `SELECT time_bucket(INTERVAL 10 SECOND, ts) AS window_start, sensor, stddev(value), var_pop(value), median(value), quantile_disc(value, 0.9) FROM ev GROUP BY ALL`},
	{kind: "stats on a stream", sql: `SELECT window_start, count(*), quantile_cont(value, 0.25) FROM ev WHERE value > 20 GROUP BY TUMBLE(ts, INTERVAL '15' SECOND)`,
		duckdb: `SELECT time_bucket(INTERVAL 15 SECOND, ts) AS window_start, count(*), quantile_cont(value, 0.25) FROM ev WHERE value > 20 GROUP BY ALL`},

	// regexp_matches / regexp_replace (RE2 on both engines), with options.
	{kind: "regexp", sql: `SELECT id, regexp_matches(s, 'p+l'), regexp_matches(s, '^[a-c]'), regexp_matches(s, 'APPLE', 'i'), regexp_matches(s, '[0-9]$') FROM t`},
	{kind: "regexp", sql: `SELECT id, regexp_replace(s, 'p', 'P'), regexp_replace(s, 'p', 'P', 'g'), regexp_replace(s, '([a-z]+) ([a-z]+)', '\2 \1'), regexp_replace(s, 'a', '$', 'gi') FROM t`},
	{kind: "regexp", sql: `SELECT g, count(*) FROM t WHERE regexp_matches(s, '^(apple|cherry)', 'i') GROUP BY g`},

	// WITH ... AS: CTEs read by later CTEs, twice in one query, renamed
	// columns, and over a stream's windows.
	{kind: "cte", sql: `WITH pos AS (SELECT id, g, x FROM t WHERE x > 0) SELECT g, count(*), sum(x) FROM pos GROUP BY g`},
	{kind: "cte", sql: `WITH a(k, c) AS (SELECT g, count(*) FROM t GROUP BY g), b AS (SELECT k FROM a WHERE c > 5) SELECT b.k, a.c FROM b JOIN a ON b.k = a.k`},
	{kind: "cte", sql: `WITH lab AS (SELECT k, label FROM u WHERE label IS NOT NULL) SELECT t.id, lab.label FROM t LEFT JOIN lab ON t.n = lab.k ORDER BY t.id`, ordered: true},
	{kind: "cte", sql: `WITH w AS (SELECT window_start AS ws, sensor, avg(value) AS a FROM ev GROUP BY sensor, TUMBLE(ts, INTERVAL '20' SECOND)) SELECT ws, max(a) FROM w GROUP BY ws`,
		duckdb: `WITH w AS (SELECT time_bucket(INTERVAL 20 SECOND, ts) AS ws, sensor, avg(value) AS a FROM ev GROUP BY ALL) SELECT ws, max(a) FROM w GROUP BY ws`},

	// Uncorrelated subqueries: IN / NOT IN (NULL semantics: a NULL in the
	// list makes a non-match NULL; an empty list is FALSE even for NULL),
	// EXISTS, and scalar subqueries (NULL for no row).
	{kind: "in subquery", sql: `SELECT id, n FROM t WHERE n IN (SELECT k FROM u)`},
	{kind: "in subquery", sql: `SELECT id, n IN (SELECT k FROM u), n NOT IN (SELECT k FROM u WHERE k IS NOT NULL), x IN (SELECT k FROM u WHERE k > 100) FROM t`},
	{kind: "in subquery", sql: `SELECT id FROM t WHERE g NOT IN (SELECT label FROM u WHERE label IS NOT NULL) AND n NOT IN (SELECT k + 1 FROM u WHERE k < 3)`},
	{kind: "in subquery", sql: `SELECT g, count(*) FROM t WHERE id IN (SELECT max(id) FROM t GROUP BY g) GROUP BY g`},
	{kind: "exists", sql: `SELECT id, EXISTS (SELECT 1 FROM u WHERE k > 5), NOT EXISTS (SELECT k FROM u WHERE k > 50) FROM t WHERE id < 4`},
	{kind: "exists", sql: `SELECT count(*) FROM t WHERE EXISTS (SELECT * FROM u WHERE label = 'k3')`},
	{kind: "exists, correlated", sql: `SELECT id, n FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.n)`},
	{kind: "exists, correlated", sql: `SELECT id, EXISTS (SELECT * FROM u WHERE t.n = k AND label <> 'k1'), NOT EXISTS (SELECT 1 FROM u WHERE u.k = t.n) FROM t`},
	{kind: "exists, correlated", sql: `SELECT g, count(*) FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE k = n AND k > 0) GROUP BY g`},
	// Correlated subqueries, decorrelated into LEFT JOINs of grouped
	// tables: scalar (count of nothing is 0, other aggregates NULL), IN and
	// NOT IN (NULLs in the set or the value), NOT EXISTS, several equalities.
	{kind: "correlated scalar", sql: `SELECT id, g, x FROM t t1 WHERE x > (SELECT avg(x) FROM t t2 WHERE t2.g = t1.g)`},
	{kind: "correlated scalar", sql: `SELECT id, (SELECT count(*) FROM u WHERE u.k = t.n), (SELECT max(label) FROM u WHERE k = n), (SELECT sum(k) * 2 FROM u WHERE u.k = t.n AND label <> 'k3') FROM t`},
	{kind: "correlated scalar", sql: `SELECT g, count(*) FROM t a WHERE a.n >= (SELECT median(b.n) FROM t b WHERE b.g = a.g AND b.x > 0) GROUP BY g`},
	{kind: "correlated scalar", sql: `SELECT id, x - (SELECT avg(x) FROM t b WHERE b.g = a.g AND date_trunc('month', b.ts) = date_trunc('month', a.ts)) AS dev FROM t a WHERE ts IS NOT NULL`},
	{kind: "correlated, grouped", sql: `WITH s AS (SELECT g, n, x FROM t WHERE x IS NOT NULL) SELECT g, max(x) - min(x) AS spread, (SELECT count(*) FROM s s2 WHERE s2.g = s.g AND s2.n > 2) AS big FROM s GROUP BY g`},
	{kind: "correlated, grouped", sql: `SELECT g, count(*) FROM t GROUP BY g HAVING count(*) > (SELECT count(*) FROM t b WHERE b.g = t.g AND b.n > 3) + 2`},
	{kind: "correlated, grouped", sql: `SELECT n, sum(x), (SELECT max(label) FROM u WHERE u.k = t.n), n NOT IN (SELECT k + 1 FROM u WHERE u.k = t.n - 1 AND label <> 'k0') FROM t GROUP BY n`},
	{kind: "correlated, outer condition", sql: `SELECT id, EXISTS (SELECT 1 FROM u WHERE u.k = t.n AND u.label <> 'k2' AND t.x > 0), (SELECT count(*) FROM u WHERE u.k = t.n AND t.g = 'a'), (SELECT max(k) FROM u WHERE t.x > 1) FROM t`},
	{kind: "correlated, outer condition", sql: `SELECT id FROM t WHERE n NOT IN (SELECT k FROM u WHERE u.label = 'k' || CAST(t.n AS VARCHAR) AND t.g <> 'b') AND NOT EXISTS (SELECT 1 FROM u WHERE t.x < -2)`},
	{kind: "correlated in", sql: `SELECT id, n IN (SELECT k FROM u WHERE u.label = t.g || '1'), n NOT IN (SELECT k FROM u WHERE upper(u.label) = upper(t.s)) FROM t`},
	{kind: "correlated in", sql: `SELECT id FROM t WHERE n IN (SELECT k FROM u WHERE u.k + 3 = t.id AND u.k = t.n - 0) OR id IN (SELECT b.id + 1 FROM t b WHERE b.g = t.g)`},
	{kind: "correlated in", sql: `SELECT id, g, n NOT IN (SELECT b.n FROM t b WHERE b.g = t.g AND b.id <> 3) FROM t`},
	{kind: "correlated not exists", sql: `SELECT id, g FROM t WHERE NOT EXISTS (SELECT 1 FROM t b WHERE b.g = t.g AND b.n = t.n AND b.id = t.id - 1)`},
	{kind: "correlated not exists", sql: `SELECT id FROM t a WHERE NOT EXISTS (SELECT * FROM t b WHERE b.g = a.g AND b.n = a.n AND b.x > 1)`},
	{kind: "correlated exists", sql: `SELECT id, EXISTS (SELECT 1 FROM t b WHERE b.g = t.g AND b.n = t.n AND b.x > 5) AS e FROM t`},
	{kind: "scalar subquery", sql: `SELECT id, x, x - (SELECT avg(x) FROM t) FROM t WHERE x > (SELECT avg(x) FROM t)`},
	{kind: "scalar subquery", sql: `SELECT id, (SELECT max(label) FROM u), (SELECT k FROM u WHERE k > 100) FROM t WHERE id <= 3`},
	{kind: "scalar subquery", sql: `SELECT g, sum(x) / (SELECT sum(x) FROM t) FROM t GROUP BY g HAVING count(*) > (SELECT count(*) / 10 FROM t)`},
	{kind: "subquery on a stream", sql: `SELECT window_start, count(*) FROM ev WHERE sensor IN (SELECT k FROM u) AND value > (SELECT avg(k) FROM u) GROUP BY TUMBLE(ts, INTERVAL '30' SECOND)`,
		duckdb: `SELECT time_bucket(INTERVAL 30 SECOND, ts) AS window_start, count(*) FROM ev WHERE sensor IN (SELECT k FROM u) AND value > (SELECT avg(k) FROM u) GROUP BY ALL`},

	// Correlation of any kind, unnested over the outer values' domain
	// (Neumann & Kemper): comparisons other than =, the outer row in the
	// subquery's SELECT list, NULL outer values, IN and NOT IN.
	{kind: "correlated, any", sql: `SELECT id, (SELECT count(*) FROM t b WHERE b.x < a.x) AS below FROM t a`},
	{kind: "correlated, any", sql: `SELECT id FROM t a WHERE EXISTS (SELECT 1 FROM t b WHERE b.g = a.g AND b.id <> a.id AND b.n = a.n)`},
	{kind: "correlated, any", sql: `SELECT id, g FROM t a WHERE NOT EXISTS (SELECT 1 FROM t b WHERE b.g = a.g AND b.x > a.x) AND x IS NOT NULL`},
	{kind: "correlated, any", sql: `SELECT id, (SELECT max(k) FROM u WHERE u.k < t.n), (SELECT sum(k) FROM u WHERE u.k <> t.n AND u.label IS NOT NULL) FROM t`},
	{kind: "correlated, any", sql: `SELECT id, (SELECT max(k) + t.n FROM u) AS m FROM t`},
	{kind: "correlated, any", sql: `SELECT id, (SELECT count(*) FROM u WHERE u.k > coalesce(t.n, 0)) AS c FROM t`},
	{kind: "correlated, any", sql: `SELECT id, n IN (SELECT k FROM u WHERE u.k <= t.id - 3), n NOT IN (SELECT k FROM u WHERE k < t.id - 30) FROM t`},
	{kind: "correlated, any", sql: `SELECT g, count(*) FROM t a WHERE x > (SELECT avg(x) FROM t b WHERE b.id < a.id) GROUP BY g`},

	// DECIMAL: exact arithmetic on literals and columns, as DuckDB.
	{kind: "decimal", sql: `SELECT id, amt, rate, amt * rate, amt + 1, amt - rate, -amt, abs(amt), amt * (1 - rate) * (1 + rate) FROM m`},
	{kind: "decimal", sql: `SELECT sum(amt), avg(amt), min(amt), max(rate), count(amt), sum(amt * (1 - rate)), avg(rate) FROM m`},
	{kind: "decimal", sql: `SELECT id, rate FROM m WHERE rate BETWEEN 0.06 - 0.01 AND 0.06 + 0.01`},
	{kind: "decimal", sql: `SELECT id, amt > 10.5, amt = 12.50, CASE WHEN amt > 0 THEN amt ELSE 0 END, coalesce(amt, 0), greatest(amt, rate), least(amt, 0.5) FROM m`},
	{kind: "decimal", sql: `SELECT rate, count(*), sum(amt), max(amt) FROM m GROUP BY rate`},
	{kind: "decimal", sql: `SELECT id, amt FROM m ORDER BY amt DESC NULLS LAST, id LIMIT 7`, ordered: true},
	{kind: "decimal", sql: `SELECT id, CAST(amt AS DOUBLE), CAST(amt AS BIGINT), CAST(amt AS DECIMAL(10,1)), CAST(rate AS VARCHAR), amt::INT FROM m`},
	{kind: "decimal", sql: `SELECT a.id, b.id, a.rate FROM m a JOIN m b ON a.rate = b.rate WHERE a.id < b.id AND a.id < 6`},
	{kind: "decimal", sql: `SELECT count(DISTINCT rate), sum(DISTINCT rate), avg(DISTINCT rate), min(amt) FILTER (WHERE rate > 0.05) FROM m`},
	{kind: "decimal", sql: `SELECT 0.1 + 0.2, 0.1 + 0.2 = 0.3, 1.5 * 2, 10.0 / 4, 0.06 - 0.01, CAST(1.25 AS DECIMAL(3,1)), CAST(-1.25 AS DECIMAL(3,1)), 2.5::INT, sum(amt) / 7.0 FROM m`},
	{kind: "decimal", sql: `SELECT m.id, amt / rate, amt * 1.5, x * 0.5, amt + x, amt * n FROM m JOIN t ON m.id = t.id`},

	// DATE columns and calendar intervals (month ends clamp, as DuckDB).
	{kind: "date", sql: `SELECT id, d, d + INTERVAL '1' MONTH, d - INTERVAL '1' YEAR, d + INTERVAL 3 DAY, EXTRACT(year FROM d), d + INTERVAL '1 month 2 days' FROM m`},
	{kind: "date", sql: `SELECT count(*), min(d), max(d) FROM m WHERE d >= DATE '2024-01-31' AND d < DATE '2024-01-31' + INTERVAL '2' MONTH`},
	{kind: "date", sql: `SELECT DATE '2024-01-31' + INTERVAL '1' MONTH, TIMESTAMP '2023-03-31 10:00:00' - INTERVAL '1' MONTH, DATE '2024-02-29' + INTERVAL '1' YEAR, DATE '2024-03-31' - INTERVAL '13' MONTH`},
	{kind: "date", sql: `SELECT d, count(*) FROM m WHERE d BETWEEN DATE '2024-02-01' AND DATE '2024-12-31' GROUP BY d ORDER BY d`, ordered: true},
	{kind: "date", sql: `SELECT a.id, b.id FROM m a JOIN m b ON a.d = b.d WHERE a.id < b.id`},

	// SUBSTRING ... FROM ... FOR, and a FROM item's column list.
	{kind: "substring", sql: `SELECT id, SUBSTRING(s FROM 2 FOR 3), SUBSTRING(s FROM 3), substring(s, 1, 2), SUBSTRING(s FROM -3 FOR 2) FROM t`},
	{kind: "column list", sql: `SELECT k, c FROM (SELECT g, count(*) FROM t GROUP BY g) AS x (k, c) WHERE c > 1`},
	{kind: "column list", sql: `SELECT a, b, label FROM u AS v (a) JOIN (SELECT k, k * 2 FROM u) AS w (c, b) ON v.a = w.c`},
	// Inner joins in the order of least cost (planner/rewrite's
	// reorder_joins): chains of equalities (one class), an OR sharing its
	// join condition, a relation no predicate connects, a LEFT JOIN among
	// inner joins, conditions of three relations, NULL keys.
	{kind: "join order", sql: `SELECT a.id, b.id, u.label FROM t a, t b, u WHERE a.n = u.k AND b.n = u.k AND a.g = b.g AND a.id < b.id`},
	{kind: "join order", sql: `SELECT count(*), sum(a.x) FROM u, t a, t b, w WHERE a.n = u.k AND u.k = b.n AND b.id = w.id AND (a.x > 1 OR w.v < 0)`},
	{kind: "join order", sql: `SELECT a.id, b.id FROM t a, t b WHERE (a.n = b.n AND a.g = 'a' AND b.x > 0) OR (a.n = b.n AND a.g = 'b' AND b.x < 0)`},
	{kind: "join order", sql: `SELECT u.k, w.id FROM u, w, t WHERE u.k = t.n AND t.id = 3`},
	{kind: "join order", sql: `SELECT a.id, c.label, w.id FROM t a JOIN u c ON a.n = c.k LEFT JOIN w ON w.k = a.n, u d WHERE d.k = c.k AND d.label IS NOT NULL`},
	{kind: "join order", sql: `SELECT a.id, b.id, w.id FROM t a, t b, w WHERE a.n = b.n AND b.n = w.k AND a.x + b.x > w.v`},
	{kind: "join order", sql: `SELECT w.id, t.id FROM w, t WHERE w.k = t.id OR (w.k = t.n AND t.g = 'c')`},

	// RIGHT JOIN: every right row, the left's columns NULL where none match.
	{kind: "right join", sql: `SELECT t.id, u.k, u.label FROM t RIGHT JOIN u ON t.n = u.k`},
	{kind: "right join", sql: `SELECT u.label, count(t.id), sum(t.x) FROM t RIGHT OUTER JOIN u ON t.n = u.k GROUP BY u.label`},
	{kind: "right join", sql: `SELECT * FROM u RIGHT JOIN t ON u.k = t.n WHERE t.id < 12`},

	// SELECT without FROM: one row.
	{kind: "no from", sql: `SELECT 1 + 2, 'a' || 'b', greatest(2, NULL, 5), NULL IS NULL, 7 % 2, TRY_CAST('x' AS INT), date_part('year', TIMESTAMP '2024-05-06 07:08:09')`},
	{kind: "no from", sql: `SELECT count(*), sum(3), max('z')`},
	// Division as DuckDB: / is a DOUBLE quotient of integers too, IEEE at
	// zero (Infinity; NaN for 0/0); // truncates integers toward zero and
	// is NULL by zero; % has the sign of the dividend, NULL by an integer
	// zero, NaN by a DOUBLE one.
	{kind: "division", sql: `SELECT id, n / 2, n // 2, n % 3, -n % 3, n // -2, x / 2, x // 2, x % 2, -x % 3 FROM t`},
	{kind: "division", sql: `SELECT id, n / 0, n // 0, n % 0, x / 0, x // 0, x % 0, id / (n - n), (n - n) / 0 FROM t`},
	{kind: "division", sql: `SELECT g, sum(n) / count(n), sum(n) // count(n), count(*) / 3, count(*) // 3, count(*) % 3, sum(x) // 2 FROM t GROUP BY g`},
	{kind: "division", sql: `SELECT 7 / 2, 7 // 2, -7 // 2, -7 % 3, 7 % -3, 7.5 // 2, -7.5 % 2, 1 / 0, -1 / 0, 0 / 0, 1 // 0, 1 % 0, 5 // -2 * 3`},
	{kind: "division", sql: `SELECT id FROM t WHERE n / 4 > 1 AND id // 10 = 1`},

	// FULL JOIN of tables: matches, then both sides' unmatched rows with
	// the other side's columns NULL (NULL keys match nothing).
	{kind: "full join", sql: `SELECT t.id, t.n, u.k, u.label FROM t FULL JOIN u ON t.n = u.k`},
	{kind: "full join", sql: `SELECT coalesce(t.n, u.k) AS key, count(t.id), count(u.label), count(*) FROM t FULL OUTER JOIN u ON t.n = u.k GROUP BY 1`},
	{kind: "full join", sql: `SELECT a.k, a.label, b.k2 FROM u a FULL JOIN (SELECT k + 3 AS k2 FROM u WHERE k > 0) b ON a.k = b.k2 ORDER BY a.k NULLS FIRST, b.k2 NULLS FIRST`, ordered: true},
	{kind: "full join", sql: `SELECT * FROM u FULL JOIN t ON u.k = t.n AND u.label = t.g WHERE t.id IS NULL OR u.k IS NULL`},
	{kind: "full join", sql: `WITH a AS (SELECT g, count(*) AS c FROM t WHERE x > 0 GROUP BY g), b AS (SELECT g, sum(n) AS s FROM t WHERE n > 2 GROUP BY g) SELECT coalesce(a.g, b.g), a.c, b.s FROM a FULL JOIN b ON a.g = b.g`},

	// Analyst-style queries mixing CTEs, window functions, subqueries,
	// date and string functions.
	{kind: "analyst", sql: `WITH m AS (SELECT date_trunc('month', ts) AS month, g, sum(x) AS total FROM t WHERE ts IS NOT NULL AND g IS NOT NULL GROUP BY 1, 2) SELECT month, g, total, rank() OVER (PARTITION BY month ORDER BY total DESC NULLS LAST) AS r FROM m ORDER BY month, r, g`, ordered: true},
	{kind: "analyst", sql: `WITH r AS (SELECT id, g, x, row_number() OVER (PARTITION BY g ORDER BY x DESC, id) AS rn FROM t WHERE x IS NOT NULL) SELECT g, id, x FROM r WHERE rn <= 2 ORDER BY g NULLS FIRST, rn`, ordered: true},
	{kind: "analyst", sql: `SELECT upper(coalesce(g, 'none')) AS grp, count(*) AS n, round(avg(x), 3) AS ax, count(DISTINCT lower(s)) AS ds FROM t WHERE id NOT IN (SELECT id FROM t WHERE x < -3) GROUP BY 1 HAVING count(*) > 2 ORDER BY n DESC, grp`, ordered: true},
	{kind: "analyst", sql: `SELECT id, g, x, x - avg(x) OVER (PARTITION BY g) AS dev, sum(n) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS run3 FROM t WHERE x > (SELECT avg(x) FROM t t2 WHERE t2.g = t.g) ORDER BY id`, ordered: true},
	{kind: "analyst", sql: `WITH d AS (SELECT EXTRACT(dow FROM ts) AS dow, EXTRACT(hour FROM ts) AS h, x FROM t WHERE ts IS NOT NULL) SELECT dow, count(*), sum(CASE WHEN h < 12 THEN 1 ELSE 0 END) AS am, max(x) FROM d GROUP BY dow ORDER BY dow`, ordered: true},
	{kind: "analyst", sql: `SELECT regexp_replace(lower(s), '[^a-z]', '', 'g') AS w, count(*) AS c, min(id) FROM t WHERE s IS NOT NULL AND length(s) > 0 GROUP BY 1 ORDER BY c DESC, w LIMIT 4`, ordered: true},
	{kind: "analyst", sql: `WITH first_seen AS (SELECT g, min(ts) AS f FROM t GROUP BY g) SELECT t.g, t.id, t.ts - fs.f < INTERVAL '10' DAY AS early, date_part('day', t.ts) FROM t JOIN first_seen fs ON t.g = fs.g WHERE t.ts < fs.f + INTERVAL '30' DAY ORDER BY t.g, t.id`, ordered: true},
	{kind: "analyst", sql: `SELECT id, lag(x) OVER (ORDER BY id) AS prev, x - lag(x) OVER (ORDER BY id) AS delta, lead(s, 2) OVER (ORDER BY id) AS s2 FROM t WHERE id <= 15 ORDER BY id`, ordered: true},
	{kind: "analyst", sql: `WITH top AS (SELECT g FROM t GROUP BY g ORDER BY sum(x) DESC NULLS LAST LIMIT 2) SELECT t.g, count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM t WHERE t.g IN (SELECT g FROM top) GROUP BY t.g`},
	{kind: "analyst", sql: `SELECT g, n, count(*) AS c, sum(count(*)) OVER (PARTITION BY g) AS gc, count(*) / sum(count(*)) OVER (PARTITION BY g) AS share FROM t WHERE g IS NOT NULL AND n IS NOT NULL GROUP BY g, n ORDER BY g, n`, ordered: true},
	{kind: "analyst", sql: `SELECT id, s, CASE WHEN s ILIKE 'apple%' THEN 'apple' WHEN regexp_matches(s, '[0-9]') THEN 'digit' ELSE 'other' END AS kind, greatest(n, 0) // 2 AS half FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.n AND u.label IS NOT NULL) ORDER BY id`, ordered: true},
	{kind: "analyst", sql: `WITH daily AS (SELECT date_trunc('day', ts) AS d, count(*) AS c FROM t WHERE ts IS NOT NULL GROUP BY 1) SELECT d, c, avg(c) OVER (ORDER BY d ROWS BETWEEN 6 PRECEDING AND CURRENT ROW) AS ma7, c - (SELECT avg(c) FROM daily) AS vs_mean FROM daily ORDER BY d`, ordered: true},
	{kind: "analyst, stream", sql: `SELECT window_start, count(*), avg(value) FROM ev WHERE value > (SELECT max(x) * 5 FROM t WHERE t.n = ev.sensor) GROUP BY TUMBLE(ts, INTERVAL '20' SECOND)`,
		duckdb: `SELECT time_bucket(INTERVAL 20 SECOND, ts) AS window_start, count(*), avg(value) FROM ev WHERE value > (SELECT max(x) * 5 FROM t WHERE t.n = ev.sensor) GROUP BY ALL`},

	// String functions as DuckDB: concat() skips NULLs (|| does not);
	// substr counts a negative start from the end, a negative length back.
	{kind: "strings", sql: `SELECT id, concat(g, s), g || s, concat(s, NULL, '!', g), substr(s, 2, 3), substr(s, -3), substr(s, 0, 2), substr(s, 0), substr(s, -2, 5), substr(s, 2, -1), substr(s, 3, -5), substr(s, -20, 3), substr(s, 100), substr(s, 0, -1), substr(s, 1, 0) FROM t`},
	{kind: "strings", sql: `SELECT g, concat(min(s), '/', max(s)), count(*) FROM t GROUP BY g HAVING concat(g, 'x') <> 'x'`},

	{kind: "no from", sql: `SELECT (SELECT count(*) FROM t), (SELECT max(x) FROM t) > 10, EXISTS (SELECT 1 FROM u WHERE k = 99), 2 IN (SELECT k FROM u)`},
}

// featureTables are the relations of the feature data set: t and u are
// tables, ev a stream (event-time order, one reading every 250 ms).
var featureTables = []struct {
	name   string
	stream bool
	cols   []column
	rows   int
	row    func(i int, b []array.Builder)
}{
	{
		name: "t",
		cols: []column{{"id", "BIGINT", "BIGINT"}, {"g", "VARCHAR", "VARCHAR"}, {"x", "DOUBLE", "DOUBLE"},
			{"n", "INT", "INTEGER"}, {"s", "VARCHAR", "VARCHAR"}, {"ts", "TIMESTAMP", "TIMESTAMP"}},
		rows: 40,
		row: func(i int, b []array.Builder) {
			b[0].(*array.Int64Builder).Append(int64(i + 1))
			appendOrNull(b[1], i%7 == 3, func() { b[1].(*array.StringBuilder).Append([]string{"a", "b", "c", "B"}[h(i, 41)%4]) })
			appendOrNull(b[2], i%5 == 4, func() { b[2].(*array.Float64Builder).Append(float64(int(h(i, 42)%200)-50) / 8) })
			appendOrNull(b[3], i%6 == 5, func() { b[3].(*array.Int32Builder).Append(int32(h(i, 43)%9) - 2) })
			words := []string{"Apple pie", "apple", "banana split", "Cherry", "grape-7", "x_y%z", "", "APPLE tart"}
			appendOrNull(b[4], i%9 == 8, func() { b[4].(*array.StringBuilder).Append(words[h(i, 44)%uint64(len(words))]) })
			t0 := time.Date(2025, 11, 28, 21, 30, 15, 250_000_000, time.UTC)
			appendOrNull(b[5], i%8 == 7, func() {
				b[5].(*array.TimestampBuilder).Append(arrow.Timestamp(t0.Add(time.Duration(h(i, 45)%(200*24*3600)) * time.Second).UnixMicro()))
			})
		},
	},
	{
		name: "u",
		cols: []column{{"k", "INT", "INTEGER"}, {"label", "VARCHAR", "VARCHAR"}},
		rows: 8,
		row: func(i int, b []array.Builder) {
			appendOrNull(b[0], i == 7, func() { b[0].(*array.Int32Builder).Append(int32(i - 1)) })
			appendOrNull(b[1], i == 2, func() { b[1].(*array.StringBuilder).Append(fmt.Sprintf("k%d", i-1)) })
		},
	},
	{
		// w: edges: unicode text, timestamps at day, year, epoch and ISO
		// week boundaries (before 1970 too), -0.0, tiny and huge numbers.
		name: "w",
		cols: []column{{"id", "BIGINT", "BIGINT"}, {"s", "VARCHAR", "VARCHAR"}, {"ts", "TIMESTAMP", "TIMESTAMP"},
			{"v", "DOUBLE", "DOUBLE"}, {"k", "BIGINT", "BIGINT"}},
		rows: len(edgeStrings),
		row: func(i int, b []array.Builder) {
			b[0].(*array.Int64Builder).Append(int64(i + 1))
			appendOrNull(b[1], i == 7, func() { b[1].(*array.StringBuilder).Append(edgeStrings[i]) })
			appendOrNull(b[2], i == 10, func() { b[2].(*array.TimestampBuilder).Append(arrow.Timestamp(edgeTimes[i].UnixMicro())) })
			appendOrNull(b[3], i == 6, func() { b[3].(*array.Float64Builder).Append(edgeDoubles[i]) })
			appendOrNull(b[4], i == 4, func() { b[4].(*array.Int64Builder).Append(edgeInts[i]) })
		},
	},
	{
		// m: money and dates, as TPC-H stores them: DECIMALs (stored as
		// integers, NULLs too) and DATEs around month ends and leap days.
		name: "m",
		cols: []column{{"id", "BIGINT", "BIGINT"}, {"amt", "DECIMAL(15,2)", "DECIMAL(15,2)"}, {"rate", "DECIMAL(4,3)", "DECIMAL(4,3)"},
			{"d", "DATE", "DATE"}},
		rows: 30,
		row: func(i int, b []array.Builder) {
			b[0].(*array.Int64Builder).Append(int64(i + 1))
			appendOrNull(b[1], i%7 == 6, func() {
				b[1].(*array.Decimal128Builder).Append(decimal128.FromI64(int64(h(i, 61)%200000) - 50000))
			})
			appendOrNull(b[2], i%9 == 8, func() { b[2].(*array.Decimal128Builder).Append(decimal128.FromI64(int64(h(i, 62)%11) * 10)) })
			day0 := time.Date(2024, 1, 28, 0, 0, 0, 0, time.UTC)
			appendOrNull(b[3], i%8 == 5, func() {
				b[3].(*array.Date32Builder).Append(arrow.Date32FromTime(day0.AddDate(0, 0, int(h(i, 63)%400))))
			})
		},
	},
	{
		name:   "ev",
		stream: true,
		cols:   []column{{"ts", "TIMESTAMP", "TIMESTAMP"}, {"sensor", "INT", "INTEGER"}, {"value", "DOUBLE", "DOUBLE"}},
		rows:   240,
		row: func(i int, b []array.Builder) {
			b[0].(*array.TimestampBuilder).Append(arrow.Timestamp(event0.UnixMicro() + int64(i)*250_000))
			b[1].(*array.Int32Builder).Append(int32(h(i, 51) % 4))
			appendOrNull(b[2], i%11 == 10, func() { b[2].(*array.Float64Builder).Append(cents(h(i, 52) % 10000)) })
		},
	},
}

// The rows of w, by column.
var (
	edgeStrings = []string{"Żółw", "straße", "naïve café", "日本語テキスト", "😀 smile", "ÅNGSTRÖM", "", "", "a b  c", "Ωmega", "x,y,,z", "mixed ÄöÜ"}
	edgeTimes   = []time.Time{
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Date(2000, 2, 29, 12, 0, 0, 0, time.UTC), time.Date(2024, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2023, 1, 1, 8, 0, 0, 0, time.UTC),
		time.Date(2020, 12, 31, 18, 30, 0, 0, time.UTC), time.Date(2021, 1, 3, 23, 59, 59, 0, time.UTC),
		time.Date(1900, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2099, 12, 31, 23, 0, 0, 500000000, time.UTC),
		{}, time.Date(2024, 2, 29, 0, 0, 0, 1000, time.UTC),
	}
	edgeDoubles = []float64{-0.5, 2.5, -2.5, math.Copysign(0, -1), 1e20, -1e-7, 0, 3, -3, 123.456, 0.125, -7.75}
	edgeInts    = []int64{-5, 3, -5, 0, 0, 7, 7, -1, 2, -100, 100, 0}
)

func appendOrNull(b array.Builder, null bool, add func()) {
	if null {
		b.AppendNull()
		return
	}
	add()
}

// writeFeatureData writes each feature relation as Parquet under dir.
func writeFeatureData(dir string) error {
	for _, ft := range featureTables {
		schema := table{cols: ft.cols}.schema()
		f, err := os.Create(filepath.Join(dir, ft.name+".parquet"))
		if err != nil {
			return err
		}
		w, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			f.Close()
			return err
		}
		rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i := 0; i < ft.rows; i++ {
			ft.row(i, rb.Fields())
		}
		rec := rb.NewRecord()
		err = w.Write(rec)
		rec.Release()
		rb.Release()
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", ft.name, err)
		}
	}
	return nil
}

func featureScript(dir, sql string) string {
	var b strings.Builder
	for _, ft := range featureTables {
		kind := "TABLE"
		if ft.stream {
			kind = "STREAM"
		}
		cols := make([]string, len(ft.cols))
		for i, c := range ft.cols {
			cols[i] = c.name + " " + c.sqlType
		}
		fmt.Fprintf(&b, "CREATE %s %s (%s) FROM FILE '%s' FORMAT PARQUET;\n", kind, ft.name, strings.Join(cols, ", "), filepath.Join(dir, ft.name+".parquet"))
	}
	b.WriteString(sql)
	b.WriteString(";\n")
	return b.String()
}

func featureViews(ctx context.Context, d *duckEngine, dir string) error {
	for _, ft := range featureTables {
		sel := make([]string, len(ft.cols))
		for i, c := range ft.cols {
			sel[i] = c.name
			if c.sqlType == "TIMESTAMP" {
				sel[i] = fmt.Sprintf("CAST(%s AS TIMESTAMP) AS %s", c.name, c.name)
			}
		}
		stmt := fmt.Sprintf("CREATE OR REPLACE VIEW %s AS SELECT %s FROM read_parquet('%s')", ft.name, strings.Join(sel, ", "), filepath.Join(dir, ft.name+".parquet"))
		if _, err := d.db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}

// TestFeaturesMatchDuckDB runs every feature query on both engines over the
// same small files and requires the same answers.
func TestFeaturesMatchDuckDB(t *testing.T) {
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
	for i, f := range append(append([]feature(nil), features...), funcFeatures...) {
		name := fmt.Sprintf("%03d %s", i, f.kind)
		t.Run(name, func(t *testing.T) {
			d := f.duckdb
			if d == "" {
				d = f.sql
			}
			want, err := duck.run(ctx, query{duckdb: d}, dir)
			if err != nil {
				t.Fatalf("DuckDB: %v\n%s", err, d)
			}
			c := &collector{}
			err = exec.RunScript(ctx, "features.sql", featureScript(dir, f.sql), exec.ScriptOptions{
				Options:   exec.Options{BaseDir: dir},
				NewOutput: func() (sinks.Writer, error) { return c, nil },
			})
			if err != nil {
				t.Fatalf("tierflow: %v\n%s", err, f.sql)
			}
			if len(want) == 0 && !f.empty {
				t.Errorf("DuckDB returns no rows: the case tests nothing\n%s", d)
			}
			if diff := compare(query{ordered: f.ordered}, c.rows, want); diff != "" {
				t.Errorf("%s\n%s\ntierflow: %v\nDuckDB:   %v", diff, f.sql, c.rows, want)
			}
		})
	}
}
