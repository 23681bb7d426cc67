-- Expressions: operator precedence, CASE, CAST, field access, indexing,
-- literals of every kind.

SELECT
  a OR b AND NOT c,
  (a OR b) AND c,
  NOT (a = b),
  -x * (y + z) % 3,
  -(-x),
  a || '-' || b,
  x <> y, x != y, x <= y, x >= y, x < y, x > y,
  v IS NULL, v IS NOT NULL,
  v NOT BETWEEN 1 AND 10,
  name NOT LIKE 'tmp%',
  CASE WHEN score > 0.9 THEN 'high' WHEN score > 0.5 THEN 'mid' ELSE 'low' END AS band,
  CASE label WHEN 'car' THEN 1 WHEN 'bus' THEN 2 END AS code,
  CAST(score AS DOUBLE), CAST(camera AS VARCHAR),
  d.box[0], d.box[2] - d.box[0] AS width,
  embed(frame).vector[1],
  (ts).epoch,
  1.5e3, .25, 42, TRUE, FALSE, NULL,
  INTERVAL '250' MILLISECONDS, INTERVAL '1' HOUR, INTERVAL '2' DAYS,
  TIMESTAMP '2026-11-22T00:00:00Z'
FROM t;
