-- Every objective of WITH (...), and the statements around a running query.
-- PRIORITY parses; the planner refuses it ("not supported yet") until it acts
-- on it. BUDGET asks for the most accurate plan within a cost per hour.
CREATE SINK alerts
  TO NATS 'alerts';

INSERT INTO alerts
SELECT camera, label
FROM frames
CROSS JOIN LATERAL detector(frame) AS d(box, label, score)
WHERE score > 0.8
WITH (
  ACCURACY >= 0.7,
  THROUGHPUT >= 40 PER SECOND,
  LATENCY <= 200 MS PERCENTILE 99,
  BUDGET <= 12.5 PER HOUR,
  PRIORITY REALTIME
);

SELECT camera, count(*) AS n
FROM frames
GROUP BY camera, TUMBLE(ts, INTERVAL '1' MINUTE)
WITH (THROUGHPUT >= 600 PER MINUTE, LATENCY <= 2 SECOND, PRIORITY BEST_EFFORT);

EXPLAIN
SELECT *
FROM frames;

EXPLAIN ANALYZE
SELECT camera
FROM frames
WITH (THROUGHPUT >= 10 PER SECOND);

EXPLAIN (FORMAT JSON)
INSERT INTO alerts
SELECT camera, 'x'
FROM frames;

EXPLAIN ANALYZE (FORMAT TEXT, STRATEGY "brute-force", SEED 42)
SELECT camera
FROM frames;

SHOW MODELS;

SHOW STREAMS;

SHOW TABLES;

SHOW SINKS;

SHOW WORKERS;

SHOW TIERS;

SHOW QUERIES;

SHOW FUNCTIONS;

DESCRIBE frames;

SET planner.beam_width = 8;

SET planner.strategy = 'exhaustive';

SET runtime.gpu = FALSE;

STOP QUERY q3;

STOP QUERY 17;
