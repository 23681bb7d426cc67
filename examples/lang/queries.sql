-- Queries exercising the relational grammar: DISTINCT, star items, joins,
-- subqueries, grouping with windows, HAVING, ORDER BY, LIMIT, UNION ALL.
-- They read the sensor readings of examples/streaming and classify the
-- Fashion-MNIST images of examples/fashion.
--
--   tierflow run examples/lang/queries.sql
CREATE MODEL classify TASK 'image-classification'
  INPUTS (image TENSOR(FLOAT, 1, 28, 28))
  OUTPUTS (label VARCHAR, score FLOAT)
  VARIANTS (logreg FROM '../fashion/models/logreg.onnx' WITH (accuracy = 84.19));

CREATE STREAM shelf (id BIGINT, ts TIMESTAMP, image TENSOR(FLOAT, 1, 28, 28), true_label VARCHAR, true_group VARCHAR)
  FROM FILE '../fashion/data/shelf.arrow'
  FORMAT ARROW;

CREATE STREAM readings (sensor INT, ts TIMESTAMP, temperature DOUBLE, humidity DOUBLE)
  FROM FILE '../streaming/readings.csv'
  FORMAT CSV;

CREATE TABLE sensors (sensor INT, site VARCHAR)
  FROM FILE '../streaming/sensors.csv'
  FORMAT CSV;

SELECT DISTINCT s.site, r.*
FROM readings AS r
JOIN sensors AS s ON r.sensor = s.sensor
WHERE r.ts >= TIMESTAMP '2024-05-01 08:01:00' AND s.site LIKE 'north%'
LIMIT 5;

SELECT
  s.true_group,
  c.label,
  count(*) AS n,
  count(DISTINCT s.true_label) AS distinct_labels,
  avg(c.score) AS mean_score,
  max(c.score) - min(c.score) AS spread
FROM shelf AS s
CROSS JOIN LATERAL classify(s.image) AS c(label, score)
WHERE c.score BETWEEN 0.5 AND 1.0 AND c.label NOT IN ('Bag', 'Sandal')
GROUP BY s.true_group, c.label, HOP(s.ts, INTERVAL '30' SECOND, INTERVAL '10' SECOND)
HAVING count(*) > 3
ORDER BY n DESC, s.true_group
LIMIT 10;

SELECT
  r.sensor,
  window_start AS started,
  sum(r.temperature) AS total,
  max(s.site) AS site
FROM readings AS r
LEFT JOIN sensors AS s ON s.sensor = r.sensor
GROUP BY r.sensor, SESSION(r.ts, INTERVAL '5' MINUTE);

SELECT r.sensor, r.temperature
FROM (
  SELECT sensor, temperature
  FROM readings
  WHERE temperature IS NOT NULL
) AS r
JOIN (
  SELECT sensor, site
  FROM sensors
  WHERE site <> 'south'
) AS hot ON r.sensor = hot.sensor
LIMIT 5;

SELECT sensor, ts
FROM readings
WHERE sensor = 1
UNION ALL
SELECT sensor, ts
FROM readings
WHERE sensor = 2
UNION ALL
SELECT sensor, ts
FROM readings
WHERE sensor IN (3, 4, 5)
ORDER BY ts
LIMIT 10;

-- A comma join (FROM readings, sensors WHERE ...) parses, but the local
-- executor refuses its cross join; an equi-join says the same:
SELECT *
FROM readings
JOIN sensors ON readings.sensor = sensors.sensor
LIMIT 3;

SELECT 1 + 2 * 3, 'it''s', sensor AS "Weird Name", site AS "select"
FROM sensors;
