package main

// funcFeatures are the comparisons of the functions analysts reach for and
// of the edges of every construct: unicode text, timestamps at day, year,
// epoch and ISO-week boundaries (and before 1970), -0.0, ties, empty input,
// NULLs, aggregate FILTER and ORDER BY. They run with features in
// TestFeaturesMatchDuckDB; w is the edge table (see featureTables).
var funcFeatures = []feature{
	// String functions over unicode text.
	{kind: "unicode", sql: `SELECT id, upper(s), lower(s), length(s), strlen(s), reverse(s), left(s, 3), right(s, 2), substr(s, 2, 3), lpad(s, 8, '·'), rpad(s, 9, 'ñ') FROM w`},
	// regexp_extract is NULL where nothing matches (Flink's rule), DuckDB's
	// ''; none of these patterns matches an empty string, so NULLIF(..., '')
	// is DuckDB's spelling of the same answer.
	{kind: "unicode", sql: `SELECT id, s ILIKE '%ÖM', s LIKE '_ół%', strpos(s, 'é'), split_part(s, ' ', 2), regexp_replace(s, '[^a-z ]', '_', 'g'), regexp_extract(s, '\p{L}+'), regexp_matches(s, '^\p{Lu}'), concat_ws('|', s, id::VARCHAR) FROM w`,
		duckdb: `SELECT id, s ILIKE '%ÖM', s LIKE '_ół%', strpos(s, 'é'), split_part(s, ' ', 2), regexp_replace(s, '[^a-z ]', '_', 'g'), nullif(regexp_extract(s, '\p{L}+'), ''), regexp_matches(s, '^\p{Lu}'), concat_ws('|', s, id::VARCHAR) FROM w`},
	{kind: "unicode", sql: `SELECT string_agg(s, '/' ORDER BY s), string_agg(s, '/' ORDER BY s DESC), min(s), max(s), count(DISTINCT s) FROM w`},
	{kind: "unicode", sql: `SELECT id, s FROM w ORDER BY s NULLS FIRST, id`, ordered: true},
	{kind: "unicode", sql: `SELECT 'ż' || 'ó', length('日本'), upper('straße'), lower('ÅNGSTRÖM'), reverse('😀ab'), left('żółw', 2), right('żółw', -1)`},

	// left/right (reserved words, function names too), split_part, trim
	// with a character list, padding, repeat, contains, regexp_extract.
	{kind: "left/right", sql: `SELECT id, left(s, 2), right(s, 3), left(s, -2), right(s, -1), LEFT(s, 0), RIGHT(s, 100), left(g, n) FROM t WHERE n >= 0 OR n IS NULL`},
	{kind: "split_part", sql: `SELECT id, split_part(s, ' ', 1), split_part(s, ' ', 2), split_part(s, 'p', -1), split_part(s, '', 3), split_part(s, ' ', 0), split_part(s, 'zz', 5) FROM t`},
	{kind: "split_part", sql: `SELECT id, split_part(s, ',', 1), split_part(s, ',', -2), split_part(s, ',', 3), split_part(s, ',', -9) FROM w`},
	{kind: "trim", sql: `SELECT id, trim(s, 'ae'), ltrim(s, 'Aa'), rtrim(s, 'ep'), trim('  x  '), ltrim('xxaxx', 'x'), rtrim(s), trim(s, '') FROM t`},
	{kind: "trim", sql: `SELECT id, trim(s, 'Żw'), ltrim(s, 'a '), rtrim(s, 'ćaé '), trim(s, NULL) FROM w`},
	{kind: "strings", sql: `SELECT id, lpad(s, 6, '*'), rpad(s, 8, 'ab'), reverse(s), repeat(g, 3), repeat(s, -1), contains(s, 'pp'), strlen(s), instr(s, 'a'), substring(s, 2, 2), lcase(s), ucase(g) FROM t`},
	{kind: "strings", sql: `SELECT id, concat_ws('-', g, s, NULL), concat_ws(NULL, g), ifnull(x, -1), ifnull(g, s), coalesce(s, g, 'none') FROM t`},
	{kind: "regexp_extract", sql: `SELECT id, regexp_extract(s, '[a-z]+'), regexp_extract(s, '([a-z])([a-z])', 2), regexp_extract(s, '(\d)$', 1), regexp_extract(s, 'APP', 0, 'i'), regexp_full_match(s, '[a-z]+'), regexp_full_match(s, 'a.*E', 'i') FROM t`,
		duckdb: `SELECT id, nullif(regexp_extract(s, '[a-z]+'), ''), nullif(regexp_extract(s, '([a-z])([a-z])', 2), ''), nullif(regexp_extract(s, '(\d)$', 1), ''), nullif(regexp_extract(s, 'APP', 0, 'i'), ''), regexp_full_match(s, '[a-z]+'), regexp_full_match(s, 'a.*E', 'i') FROM t`},
	{kind: "mod", sql: `SELECT id, mod(n, 3), mod(x, 2), n % 3 = mod(n, 3) FROM t`, duckdb: `SELECT id, n % 3, x % 2, (n % 3) = (n % 3) FROM t`},

	// Numbers: sign, trunc, log, round at .5 and negative digits, casts of
	// DOUBLEs to integers (half to even) and to text (17.0).
	{kind: "numbers", sql: `SELECT id, sign(x), sign(n), trunc(x), trunc(n), trunc(x, 1), sign(-0.0), log(abs(x) + 1), log2(abs(n) + 1), log(2, abs(n) + 1), pi(), cbrt(x), pow(n, 2), ceiling(x) FROM t`},
	{kind: "numbers", sql: `SELECT id, v, sign(v), trunc(v), round(v), round(v, 1), ceil(v), floor(v), abs(v), v // 1, v % 2, greatest(v, k), least(v, k, 0) FROM w`},
	{kind: "numbers", sql: `SELECT w.id, k, sign(k), trunc(k), k // 3, k % 3, -k // 2, abs(k), k / 4, round(k / 3, 2), round(x, -1) FROM w JOIN t ON w.id = t.id`},
	{kind: "numbers", sql: `SELECT trunc(2.567, 2), trunc(-2.567, 1), trunc(17, -1), sign(-3), log(1000), log(2, 1024), round(2.5), round(-2.5), round(0.125, 2)`},
	{kind: "cast", sql: `SELECT id, v::VARCHAR, k::VARCHAR, ts::VARCHAR, CAST(ts AS VARCHAR), TRY_CAST(s AS INT), TRY_CAST(s AS DOUBLE), CAST(v AS BIGINT), v::INT, (v > 0)::VARCHAR FROM w WHERE id <> 5`},
	{kind: "cast", sql: `SELECT id, x::VARCHAR, CAST(x AS VARCHAR) || '!', x::INT, TRY_CAST(x * 1e10 AS INT), n::DOUBLE::VARCHAR FROM t`},
	{kind: "cast", sql: `SELECT NULL::INT, TRY_CAST('2024-01-01 10:00:00' AS TIMESTAMP), '2024-02-29'::TIMESTAMP, CAST('2024-01-02 03:04:05.5' AS TIMESTAMP), TRY_CAST('2024-13-01' AS TIMESTAMP), CAST('12.5' AS DOUBLE), '42'::BIGINT + 1, TRY_CAST('abc' AS DOUBLE), CAST(3.7 AS INT), CAST(-3.5 AS BIGINT), CAST(2.5 AS INT), 1e20::VARCHAR`},
	{kind: "cast", sql: `SELECT id FROM t WHERE ts > '2026-03-01'::TIMESTAMP AND ts < CAST('2026-05-01 12:00:00' AS TIMESTAMP)`},

	// Timestamps at the edges: truncation, parts, ISO weeks and years,
	// strftime, date_diff (boundaries crossed), time_bucket.
	{kind: "timestamps", sql: `SELECT id, ts, date_trunc('week', ts), date_trunc('month', ts), date_trunc('quarter', ts), date_trunc('year', ts), date_trunc('day', ts), date_trunc('hour', ts), date_trunc('millisecond', ts) FROM w`},
	{kind: "timestamps", sql: `SELECT id, EXTRACT(year FROM ts), EXTRACT(week FROM ts), EXTRACT(isoyear FROM ts), EXTRACT(dow FROM ts), EXTRACT(doy FROM ts), EXTRACT(quarter FROM ts), EXTRACT(microsecond FROM ts), EXTRACT(decade FROM ts), EXTRACT(century FROM ts), EXTRACT(epoch FROM ts), date_part('epoch', ts) FROM w`},
	{kind: "timestamps", sql: `SELECT id, date_part('yearweek', ts), date_part('millennium', ts), date_part('isodow', ts), yearweek(ts), isoyear(ts), weekofyear(ts), dayofmonth(ts), millisecond(ts), year(ts), month(ts), day(ts), hour(ts), minute(ts), second(ts), quarter(ts), dayofweek(ts), dayofyear(ts) FROM w`},
	{kind: "timestamps", sql: `SELECT id, year(ts), month(ts), day(ts), hour(ts), minute(ts), second(ts), quarter(ts), week(ts), dayofweek(ts), dayofyear(ts), isodow(ts), yearweek(ts), dayname(ts), monthname(ts) FROM t`},
	{kind: "strftime", sql: `SELECT id, strftime(ts, '%Y-%m-%d %H:%M:%S'), strftime(ts, '%a %A %b %B %j %p %I %y %w %u'), strftime(ts, '%U %W %V %G %f %g'), strftime(ts, '%-d/%-m/%Y %-H:%-M'), strftime(ts, '%c | %x | %X | %%') FROM t`},
	{kind: "strftime", sql: `SELECT id, strftime(ts, '%Y-%m-%d %H:%M:%S.%f'), strftime(ts, '%U %W %V %G %j %a'), strftime(ts, '%-I %p %y'), strftime('%d.%m.%Y', ts) FROM w`},
	{kind: "date_diff", sql: `SELECT id, date_diff('day', ts, TIMESTAMP '2026-03-01 00:00:00'), date_diff('month', ts, TIMESTAMP '2026-03-01 00:00:00'), date_diff('year', TIMESTAMP '2024-12-31 23:59:59', ts), datediff('hour', ts, TIMESTAMP '2026-01-01 00:00:00'), date_diff('week', ts, TIMESTAMP '2026-03-01 00:00:00'), date_diff('quarter', ts, TIMESTAMP '2026-03-01 00:00:00') FROM t`},
	{kind: "date_diff", sql: `SELECT id, date_diff('minute', ts, TIMESTAMP '2026-01-01 00:00:00'), date_diff('second', ts, TIMESTAMP '2026-01-01 00:00:00'), date_diff('millisecond', ts, TIMESTAMP '2026-01-01 00:00:00'), date_diff('microsecond', ts, TIMESTAMP '2026-01-01 00:00:00'), date_diff('decade', ts, TIMESTAMP '2046-01-01 00:00:00') FROM t`},
	{kind: "date_diff", sql: `SELECT id, date_diff('day', TIMESTAMP '1970-01-01 00:00:00', ts), date_diff('week', TIMESTAMP '2000-01-01 00:00:00', ts), date_diff('month', ts, TIMESTAMP '2025-01-01 00:00:00'), date_diff('year', ts, TIMESTAMP '2025-01-01 00:00:00'), date_diff('hour', ts, TIMESTAMP '2025-01-01 00:00:00'), date_diff('quarter', ts, TIMESTAMP '2025-01-01 00:00:00'), date_diff('century', ts, TIMESTAMP '2025-01-01 00:00:00') FROM w`},
	{kind: "date_diff", sql: `SELECT date_diff('day', TIMESTAMP '1969-12-31 23:00:00', TIMESTAMP '1970-01-01 01:00:00'), date_diff('hour', TIMESTAMP '1969-12-31 23:30:00', TIMESTAMP '1970-01-01 00:30:00'), date_diff('week', TIMESTAMP '2024-01-07 00:00:00', TIMESTAMP '2024-01-08 00:00:00'), date_diff('week', TIMESTAMP '1969-12-28 00:00:00', TIMESTAMP '1970-01-06 00:00:00'), date_diff('month', TIMESTAMP '2024-01-31 00:00:00', TIMESTAMP '2024-03-01 00:00:00')`},
	{kind: "time_bucket", sql: `SELECT id, time_bucket(INTERVAL '15' MINUTE, ts), time_bucket(INTERVAL '7' DAY, ts), time_bucket(INTERVAL '1' HOUR, ts, TIMESTAMP '2025-01-01 00:30:00'), date_add(ts, INTERVAL '36' HOUR) FROM t`},
	{kind: "time_bucket", sql: `SELECT id, time_bucket(INTERVAL '1' DAY, ts), time_bucket(INTERVAL '7' DAY, ts), time_bucket(INTERVAL '90' MINUTE, ts), ts + INTERVAL '1 day', ts - INTERVAL 1 HOUR, INTERVAL '2 hours' + ts FROM w`},
	{kind: "time_bucket", sql: `SELECT time_bucket(INTERVAL '1 week', ts) AS wk, count(*), min(id) FROM t GROUP BY 1`},
	{kind: "timestamps", sql: `SELECT id, ts < TIMESTAMP '1970-01-01 00:00:00', ts IS DISTINCT FROM TIMESTAMP '1970-01-01 00:00:00', greatest(ts, TIMESTAMP '2000-01-01 00:00:00'), least(ts, TIMESTAMP '2000-01-01 00:00:00') FROM w`},
	{kind: "timestamps", sql: `SELECT id, ts, lag(ts) OVER (ORDER BY ts), ts - lag(ts) OVER (ORDER BY ts) < INTERVAL '1' DAY FROM w`},
	{kind: "timestamps", sql: `SELECT dayname(ts), monthname(ts), count(*) FROM w GROUP BY 1, 2`},

	// Aggregate FILTER (WHERE ...): grouped, whole-table, empty, with
	// DISTINCT, ordered-set and statistical aggregates, and over windows.
	{kind: "filter", sql: `SELECT g, count(*) FILTER (WHERE x > 0), sum(x) FILTER (WHERE n > 2), avg(n) FILTER (WHERE s ILIKE 'a%'), count(DISTINCT n) FILTER (WHERE x IS NOT NULL), min(s) FILTER (WHERE id > 10) FROM t GROUP BY g`},
	{kind: "filter", sql: `SELECT count(*) FILTER (WHERE x > 100), sum(x) FILTER (WHERE x > 100), string_agg(s, ',') FILTER (WHERE id < 5) FROM t`},
	{kind: "filter", sql: `SELECT g, median(x) FILTER (WHERE n > 0), quantile_disc(n, 0.5) FILTER (WHERE x < 5), stddev(x) FILTER (WHERE g <> 'b'), percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FILTER (WHERE n > 0) FROM t GROUP BY g`},
	{kind: "filter", sql: `SELECT k, count(*) FILTER (WHERE v > 0), count_if(v > 0), bool_and(v > -10), bool_or(s ILIKE '%e%'), sum(k) FILTER (WHERE ts < TIMESTAMP '2000-01-01 00:00:00') FROM w GROUP BY k`},
	{kind: "filter", sql: `SELECT count(*) FILTER (WHERE id < 0), count_if(id < 0), bool_and(id < 0), bool_or(id < 0), sum(v) FILTER (WHERE id < 0) FROM w`},
	{kind: "filter", sql: `SELECT id, sum(x) FILTER (WHERE n > 0) OVER (PARTITION BY g ORDER BY id), count(*) FILTER (WHERE x > 0) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM t`},
	{kind: "filter", sql: `SELECT window_start, sensor, count(*) FILTER (WHERE value > 50), avg(value) FILTER (WHERE value < 50) FROM ev GROUP BY sensor, TUMBLE(ts, INTERVAL '10' SECOND)`,
		duckdb: `SELECT time_bucket(INTERVAL 10 SECOND, ts) AS window_start, sensor, count(*) FILTER (WHERE value > 50), avg(value) FILTER (WHERE value < 50) FROM ev GROUP BY ALL`},

	// ORDER BY inside an aggregate: string_agg in key order (DESC, NULLS
	// FIRST, several keys), with FILTER, over a window; ignored where the
	// answer does not depend on it.
	{kind: "agg order by", sql: `SELECT g, string_agg(s, '|' ORDER BY id DESC), string_agg(s ORDER BY x NULLS FIRST, id), string_agg(g, ',' ORDER BY s DESC NULLS FIRST, id) FROM t GROUP BY g`},
	{kind: "agg order by", sql: `SELECT g, string_agg(s, ',' ORDER BY ts, id) FILTER (WHERE n > 0), sum(x ORDER BY id), count(* ) FROM t GROUP BY g`},
	{kind: "agg order by", sql: `SELECT k, count(*), sum(v), string_agg(s, ',' ORDER BY id) FROM w GROUP BY k ORDER BY k NULLS FIRST`, ordered: true},
	{kind: "agg order by", sql: `SELECT id, string_agg(s, ',' ORDER BY id DESC) OVER (PARTITION BY g) FROM t`},
	{kind: "agg order by", sql: `SELECT string_agg(s, ';' ORDER BY n DESC, x, id), string_agg(CAST(id AS VARCHAR), ',' ORDER BY ts NULLS FIRST, id DESC) FROM t WHERE s IS NOT NULL`},

	// string_agg(DISTINCT s): each value once (in s's order; DuckDB's
	// order is its own without ORDER BY, so those cases compare lengths or
	// single values).
	{kind: "string_agg distinct", sql: `SELECT g, string_agg(DISTINCT s, ',' ORDER BY s), string_agg(DISTINCT s, '|' ORDER BY s DESC NULLS FIRST) FROM t GROUP BY g`},
	{kind: "string_agg distinct", sql: `SELECT g, length(string_agg(DISTINCT s, ';')), string_agg(DISTINCT g) FROM t GROUP BY g`},
	{kind: "string_agg distinct", sql: `SELECT string_agg(DISTINCT s ORDER BY s) FILTER (WHERE n > 2), string_agg(DISTINCT upper(g), '' ORDER BY upper(g)) FROM t`},

	// count_if, bool_and, bool_or.
	{kind: "bool aggregates", sql: `SELECT g, count_if(x > 0), bool_and(n >= 0), bool_or(s LIKE '%e%'), count_if(NULL) FROM t GROUP BY g`},
	{kind: "bool aggregates", sql: `SELECT id, count_if(v > 0) OVER (ORDER BY id), bool_or(k > 5) OVER (PARTITION BY k IS NULL), bool_and(k < 50) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM w`},

	// Ties, NULLs and negative numbers in ranking and frames.
	{kind: "window ties", sql: `SELECT id, k, rank() OVER (ORDER BY k), dense_rank() OVER (ORDER BY k DESC NULLS FIRST), row_number() OVER (ORDER BY k, id), ntile(5) OVER (ORDER BY k, id), percent_rank() OVER (ORDER BY k), cume_dist() OVER (ORDER BY k) FROM w`},
	{kind: "window ties", sql: `SELECT id, k, first_value(s) OVER (PARTITION BY k ORDER BY id), last_value(s) OVER (PARTITION BY k ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING), lead(id, 1, -1) OVER (PARTITION BY k ORDER BY id), lag(v, 2) OVER (ORDER BY id) FROM w`},
	{kind: "window ties", sql: `SELECT id, sum(v) OVER (ORDER BY k RANGE BETWEEN 5 PRECEDING AND 5 FOLLOWING), avg(k) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '365' DAY PRECEDING AND CURRENT ROW), count(*) OVER (ORDER BY k ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM w`},
	{kind: "window ties", sql: `SELECT id, string_agg(s, ',' ORDER BY id) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), max(ts) OVER (ORDER BY v DESC NULLS FIRST, id) FROM w`},

	// Empty input: aggregates of nothing, grouped nothing, empty CTEs and
	// subqueries.
	{kind: "empty", sql: `SELECT count(*), sum(v), avg(v), min(s), max(ts), string_agg(s, ','), median(v), stddev(v), count_if(v > 0), bool_and(v > 0), count(*) FILTER (WHERE v > 0) FROM w WHERE id > 100`},
	{kind: "empty", empty: true, sql: `SELECT k, count(*) FROM w WHERE id > 100 GROUP BY k`},
	{kind: "empty", sql: `WITH e AS (SELECT * FROM w WHERE id < 0) SELECT count(*), (SELECT max(id) FROM e), EXISTS (SELECT 1 FROM e) FROM w`},
	{kind: "empty", sql: `SELECT id FROM w WHERE id IN (SELECT id FROM w WHERE id < 0) OR id NOT IN (SELECT k FROM w WHERE k > 100)`},
	{kind: "empty", empty: true, sql: `SELECT 1 WHERE false`},
	{kind: "empty", sql: `SELECT count(*), sum(1) WHERE 1 = 0`},

	// Statistics over the edges (-0.0, 1e20, negative integers).
	{kind: "stats", sql: `SELECT sum(v), avg(v), min(v), max(v), stddev(k), variance(k), median(v), median(k), quantile_cont(v, 0.5), quantile_disc(k, 0.25), var_pop(k) FROM w`},
	{kind: "stats", sql: `SELECT id, v IS DISTINCT FROM 0, v IS NOT DISTINCT FROM -0.0, v = 0, k IS DISTINCT FROM NULL FROM w`},

	// Keywords as names where DuckDB allows them: after AS and after a dot.
	{kind: "keyword names", sql: `SELECT id, x AS offset, n AS "right", g AS full, s AS ilike FROM t WHERE id < 4`},
	{kind: "keyword names", sql: `SELECT t.id AS left, percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FILTER (WHERE n > 0) FROM t GROUP BY t.id ORDER BY 1 LIMIT 5`, ordered: true},
	{kind: "keyword names", sql: `SELECT o.offset, o.right FROM (SELECT id AS offset, n AS right FROM t) o WHERE o.offset < 5`},

	// Joins, ordering and offsets over the edges.
	{kind: "edges join", sql: `SELECT w.id, u.label FROM w RIGHT JOIN u ON w.k = u.k ORDER BY u.label NULLS FIRST, w.id`, ordered: true},
	{kind: "edges join", sql: `SELECT w.id, u.label, u.k FROM w FULL JOIN u ON w.k = u.k`},
	{kind: "edges order", sql: `SELECT id, v FROM w ORDER BY v DESC NULLS LAST, id LIMIT 3 OFFSET 2`, ordered: true},
	{kind: "edges order", sql: `SELECT id, k FROM w ORDER BY k NULLS FIRST, id DESC LIMIT 4`, ordered: true},
	{kind: "edges order", sql: `SELECT id, ts FROM w ORDER BY ts DESC NULLS FIRST OFFSET 8`, ordered: true},
	{kind: "edges order", sql: `SELECT DISTINCT k FROM w ORDER BY k DESC NULLS FIRST`, ordered: true},

	// FROM a, b WHERE a.k = b.k: an inner join (several tables, extra
	// conditions); without an equality, a cross product (a one-row
	// aggregate beside every row, most often).
	{kind: "comma join", sql: `SELECT w.id, u.k, u.label FROM w, u WHERE w.k = u.k`},
	{kind: "comma join", sql: `SELECT t.id, u.label, w.s FROM t, u, w WHERE t.n = u.k AND u.k = w.k AND t.x > 0 AND w.id <> 3`},
	{kind: "comma join", sql: `SELECT u.label, count(*), sum(t.x) FROM u, t WHERE t.n = u.k AND (t.x > 0 OR t.g IS NULL) GROUP BY u.label`},
	{kind: "comma join", sql: `SELECT a.id, b.id FROM w a, w b WHERE a.k = b.k AND a.id < b.id`},
	{kind: "comma join", sql: `SELECT t.id, w.id FROM t, w WHERE w.k = t.n AND t.id IN (SELECT id FROM t WHERE x > 0) AND w.s IS NOT NULL`},

	{kind: "cross join", sql: `SELECT t.id, s.a FROM t, (SELECT avg(x) AS a FROM t) s WHERE t.x > s.a`},
	{kind: "cross join", sql: `SELECT * FROM w CROSS JOIN u WHERE w.id < 3`},
	{kind: "cross join", sql: `SELECT u.label, count(*), sum(t.x) FROM u, t WHERE t.n = u.k OR t.n IS NULL GROUP BY u.label`},
	{kind: "cross join", sql: `SELECT a.id, b.id FROM w a CROSS JOIN w b WHERE a.v < b.v AND a.k = 7`},
	{kind: "cross join", sql: `SELECT count(*), count(u.label) FROM t, u`},
	{kind: "cross join", sql: `SELECT ts, sensor, value / m.mx FROM ev, (SELECT max(k) AS mx FROM u) m WHERE value > 90`},

	// Outer joins whose ON has conditions on one side besides the keys.
	{kind: "outer join on", sql: `SELECT t.id, u.label FROM t LEFT JOIN u ON t.n = u.k AND u.label <> 'k1'`},
	{kind: "outer join on", sql: `SELECT t.id, u.label FROM t LEFT JOIN u ON u.k = t.n AND t.x > 0 AND u.label IS NOT NULL AND t.g <> 'a'`},
	{kind: "outer join on", sql: `SELECT t.id, u.label FROM t RIGHT JOIN u ON t.n = u.k AND t.x > 0`},
	{kind: "outer join on", sql: `SELECT t.id, u.k, u.label FROM t FULL JOIN u ON t.n = u.k AND t.id < 10 AND u.k > 0`},
	{kind: "outer join on", sql: `SELECT w.id, t.id FROM w FULL JOIN t ON w.k = t.n AND t.id < 5`},
	{kind: "outer join on", sql: `SELECT g, count(u.k), count(*) FROM t LEFT JOIN u ON t.n = u.k AND u.k % 2 = 0 AND 1 = 1 GROUP BY g`},

	// UNION ALL unifies the branches' types (NULL, INT and BIGINT, DOUBLE).
	{kind: "union all", sql: `WITH a AS (SELECT k, count(*) AS c FROM w GROUP BY k), b AS (SELECT k, c FROM a WHERE c > 1), c AS (SELECT * FROM a WHERE k IS NULL) SELECT a.k, a.c, b.c FROM a LEFT JOIN b ON a.k = b.k UNION ALL SELECT k, c, NULL FROM c`},
	{kind: "union all", sql: `SELECT n, x FROM t WHERE id < 4 UNION ALL SELECT k, v FROM w WHERE id < 4 UNION ALL SELECT NULL, 1`},
	{kind: "union all", sql: `SELECT id, NULL AS z FROM u, w WHERE u.k = w.k UNION ALL SELECT id, 'x' FROM w WHERE id > 10`},

	// DuckDB's GROUP BY ALL and ORDER BY ALL.
	{kind: "group by all", sql: `SELECT g, n % 2 AS odd, count(*), sum(x) FROM t GROUP BY ALL ORDER BY ALL`, ordered: true},
	{kind: "group by all", sql: `SELECT upper(g), date_trunc('month', ts), count(*) FILTER (WHERE x > 0), 1 + 1 FROM t GROUP BY ALL`},
	{kind: "group by all", sql: `SELECT count(*), max(v) FROM w GROUP BY ALL`},
	{kind: "order by all", sql: `SELECT k, s FROM w ORDER BY ALL`, ordered: true},
	{kind: "order by all", sql: `SELECT g, n FROM t WHERE id < 20 UNION ALL SELECT label, k FROM u ORDER BY ALL LIMIT 12`, ordered: true},

	// More of each kind, as an analyst writes them.
	{kind: "cte", sql: `WITH s AS (SELECT g, sum(x) AS total FROM t GROUP BY g), r AS (SELECT g, total, rank() OVER (ORDER BY total DESC) AS rk FROM s) SELECT * FROM r WHERE rk <= 3 ORDER BY rk, g`, ordered: true},
	{kind: "cte", sql: `WITH a AS (SELECT * FROM t WHERE x > 0) SELECT a1.id, a2.id FROM a a1 JOIN a a2 ON a1.n = a2.n AND a1.id < a2.id ORDER BY 1, 2`, ordered: true},
	{kind: "cte", sql: `WITH c AS (SELECT n, count(*) AS cnt FROM t GROUP BY n) SELECT n, cnt, cnt * 100.0 / (SELECT sum(cnt) FROM c) AS pct FROM c ORDER BY n NULLS LAST`, ordered: true},
	{kind: "in list", sql: `SELECT id, n IN (1, 2, NULL), n NOT IN (1, 2, NULL), g IN ('a', 'B') FROM t`},
	{kind: "subquery", sql: `SELECT * FROM t WHERE x = (SELECT max(x) FROM t)`},
	{kind: "subquery", sql: `SELECT id FROM t WHERE g IS NOT DISTINCT FROM (SELECT g FROM t WHERE id = 4)`},
	{kind: "window", sql: `SELECT id, sum(x) OVER (PARTITION BY g ORDER BY id ROWS UNBOUNDED PRECEDING), avg(x) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) FROM t`},
	{kind: "window", sql: `SELECT id, lag(x, 1, 0.0) OVER (PARTITION BY g ORDER BY ts NULLS FIRST, id), lead(g) OVER (ORDER BY ts DESC NULLS LAST, id), ntile(4) OVER (PARTITION BY g ORDER BY x DESC NULLS LAST, id) FROM t`},
	{kind: "window", sql: `SELECT g, n, sum(x), sum(sum(x)) OVER (PARTITION BY g ORDER BY n) FROM t GROUP BY g, n`},
	{kind: "window", sql: `SELECT id, count(*) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '7 days' PRECEDING AND CURRENT ROW), count(*) OVER (ORDER BY ts RANGE BETWEEN INTERVAL 7 DAY PRECEDING AND INTERVAL 1 DAY FOLLOWING) FROM t`},
	{kind: "joins", sql: `SELECT u.label, t.id FROM u RIGHT OUTER JOIN t ON u.k = t.n WHERE t.x > 0`},
	{kind: "joins", sql: `SELECT t.id, u.label FROM t FULL OUTER JOIN u ON t.n = u.k WHERE u.label IS NULL OR t.id IS NULL`},
	{kind: "joins", sql: `SELECT count(*) FROM t LEFT JOIN u ON t.n = u.k WHERE u.k IS NULL`},
	{kind: "offset", sql: `SELECT id FROM t ORDER BY g DESC NULLS LAST, id LIMIT 5 OFFSET 5`, ordered: true},
	{kind: "group by ordinal", sql: `SELECT g, n % 2, count(*) FROM t GROUP BY 1, 2 HAVING count(*) > 1 ORDER BY 1, 2`, ordered: true},
	{kind: "extract", sql: `SELECT EXTRACT(month FROM ts) AS m, EXTRACT(dow FROM ts) AS d, count(*) FROM t GROUP BY 1, 2 ORDER BY 1, 2`, ordered: true},
	{kind: "cast", sql: `SELECT id, x::INTEGER, n::VARCHAR || 'x', CAST(n AS DOUBLE) / 3, TRY_CAST(g AS INTEGER), s::TEXT, CAST(ts AS VARCHAR), CAST('1' AS INT) + n FROM t`},
	{kind: "stats", sql: `SELECT g, median(n), quantile_cont(n, 0.3), quantile_disc(x, 0.3), percentile_disc(0.5) WITHIN GROUP (ORDER BY n), stddev_pop(x), var_samp(n) FROM t GROUP BY g`},
	{kind: "regexp", sql: `SELECT id, regexp_matches(s, '^[A-Z]'), regexp_replace(s, '(\w+)', '<>'), regexp_replace(s, '\s+', ' ', 'g') FROM t`},
	{kind: "no from", sql: `SELECT 1, 'a', NULL, TRUE, 2.5, -3, 10 // 3, 10 % 3, 10 / 4, (2 + 3) * 4, -(-5)`},
	{kind: "case", sql: `SELECT id, CASE g WHEN 'a' THEN 1 WHEN 'b' THEN 2 ELSE 0 END, CASE WHEN x IS NULL THEN 'none' END, COUNT(*) OVER (), Count(X) OVER () FROM T`},

	// A string compared with a TIMESTAMP is read as one, as DuckDB casts it.
	{kind: "text as time", sql: `SELECT id FROM t WHERE ts >= '2026-01-01' AND ts < '2026-02-01 12:30'`},
	{kind: "text as time", sql: `SELECT id, ts BETWEEN '2026-03-01' AND '2026-04-01 00:00:00', ts IN ('2026-02-12 18:09:01.25', '2000-01-01'), '2026-05-01' > ts FROM t`},
	{kind: "text as time", sql: `SELECT id FROM w WHERE ts < '1970-01-01T00:00:00' OR ts = '2000-02-29 12:00'`},
	// x::DATE, CAST(x AS DATE), DATE '...': the day, as a TIMESTAMP at
	// midnight (DuckDB's DATE values, compared and grouped).
	{kind: "date", sql: `SELECT id, ts::DATE, CAST(ts AS DATE), TRY_CAST(s AS DATE) FROM t`},
	{kind: "date", sql: `SELECT DATE '2024-01-01', '2024-02-29'::DATE, CAST('2024-03-01' AS DATE), TRY_CAST('2024-13-01' AS DATE)`},
	{kind: "date", sql: `SELECT ts::DATE AS d, count(*) FROM t GROUP BY 1 ORDER BY 1 NULLS FIRST`, ordered: true},
	{kind: "date", sql: `SELECT id FROM t WHERE ts::DATE = DATE '2026-02-12' OR ts::DATE >= '2026-05-20'`},
	{kind: "date", sql: `SELECT id, ts::DATE < ts, date_trunc('month', ts::DATE), year(ts::DATE), ts::DATE + INTERVAL 1 DAY, date_diff('day', ts::DATE, DATE '2026-06-01'), strftime(ts::DATE, '%Y/%m/%d') FROM t`},
	{kind: "date", sql: `SELECT id, ts::DATE, max(ts::DATE) OVER (), count(DISTINCT ts::DATE) OVER () FROM w`},
	// HAVING names a SELECT item by its alias; POSITION(sub IN s).
	{kind: "having alias", sql: `SELECT g, sum(x) AS total, count(*) AS c FROM t GROUP BY g HAVING total > 10 AND c >= 4`},
	{kind: "position", sql: `SELECT id, position('p' IN s), position(upper(g) IN upper(s)), position('' IN s) FROM t`},

	// SELECT without FROM.
	{kind: "no from", sql: `SELECT left('hello', -2), right('hello', -2), split_part('a-b-c', '-', -1), strftime(TIMESTAMP '2024-07-04 09:05:03', '%A %B %-d %Y %I:%M %p'), trunc(-1.99), sign(-0.0), greatest('a', 'B', 'c'), least(1, 2.5)`},
	{kind: "no from", sql: `SELECT INTERVAL '1 day' + TIMESTAMP '2024-02-28 12:00:00', TIMESTAMP '2024-03-01 00:00:00' - INTERVAL '1' DAY, TIMESTAMP '2024-12-31 23:00:00' + INTERVAL 2 HOURS`},
	{kind: "no from", sql: `SELECT 1 IS DISTINCT FROM NULL, NULL IS NOT DISTINCT FROM NULL, 'a' ILIKE 'A', 'ab' NOT ILIKE 'A%', greatest(NULL, 1), least(NULL, NULL, 2)`},
	{kind: "no from", sql: `SELECT regexp_matches('abc', 'B', 'i'), regexp_replace('aaa', 'a', 'b'), regexp_replace('aaa', 'a', 'b', 'g'), regexp_extract('key=val', '(\w+)=(\w+)', 2), regexp_full_match('abc', 'a.c')`},
	{kind: "no from", sql: `SELECT now() IS NOT NULL, date_trunc('day', now()) <= now(), EXTRACT(year FROM now()) >= 2025`},
}
