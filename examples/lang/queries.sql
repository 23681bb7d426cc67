/* Queries exercising the relational grammar: DISTINCT, star items, joins,
   subqueries, grouping with windows, HAVING, ORDER BY, LIMIT, UNION ALL. */
SELECT DISTINCT c.site, f.*
FROM frames AS f
JOIN cameras AS c ON f.camera = c.camera
WHERE f.ts >= TIMESTAMP '2026-01-01 00:00:00' AND c.site LIKE 'north-%';

SELECT
  f.camera,
  d.label,
  count(*) AS n,
  count(DISTINCT d.label) AS distinct_labels,
  avg(d.score) AS mean_score,
  max(d.score) - min(d.score) AS spread
FROM frames AS f
LEFT JOIN cameras AS c ON c.camera = f.camera
CROSS JOIN LATERAL detector(f.frame) AS d(box, label, score)
WHERE d.score BETWEEN 0.5 AND 1.0 AND d.label NOT IN ('unknown', 'background')
GROUP BY f.camera, d.label, HOP(f.ts, INTERVAL '30' SECOND, INTERVAL '10' SECOND)
HAVING count(*) > 3
ORDER BY n DESC, f.camera
LIMIT 100;

SELECT sensor, SESSION_START(at) AS started, sum(value) AS total
FROM readings
GROUP BY sensor, SESSION(at, INTERVAL '5' MINUTE);

SELECT r.sensor, r.value
FROM (
  SELECT sensor, value
  FROM readings
  WHERE value IS NOT NULL
) AS r
JOIN (
  SELECT sensor
  FROM readings
  GROUP BY sensor
  HAVING avg(value) > 10
) AS hot ON r.sensor = hot.sensor;

SELECT camera, ts
FROM frames
WHERE camera = 1
UNION ALL
SELECT camera, ts
FROM frames
WHERE camera = 2
UNION ALL
SELECT camera, ts
FROM frames
WHERE camera IN (3, 4, 5)
ORDER BY ts
LIMIT 10;

SELECT *
FROM cameras,
  labels
WHERE cameras.site = labels.site;

SELECT 1 + 2 * 3, 'it''s', "Weird Name", "select"
FROM "My Table";
