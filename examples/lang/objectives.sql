-- Every objective of WITH (...), and the statements around a running query,
-- over the Fashion-MNIST shelf and model zoo of examples/fashion. BUDGET asks
-- for the most accurate plan within a cost per hour.
--
--   tierflow run --infra examples/fashion/infra.yaml examples/lang/objectives.sql
--
-- PRIORITY REALTIME (with a LATENCY bound) or PRIORITY BEST_EFFORT tells the
-- worker's inference scheduler how to share its models with other queries.
-- STOP QUERY q3 (or STOP QUERY 17) stops a query running beside the session
-- (tierflow submit to a cluster; SHOW QUERIES names them). A script's queries
-- run one after another in the foreground, so this one has none to stop.
CREATE MODEL classify TASK 'image-classification'
  INPUTS (image TENSOR(FLOAT, 1, 28, 28))
  OUTPUTS (label VARCHAR, score FLOAT)
  VARIANTS (
    logreg FROM '../fashion/models/logreg.onnx' WITH (accuracy = 84.19, latency_ms.x2 = 0.0019),
    mlp_small FROM '../fashion/models/mlp-small.onnx' WITH (accuracy = 87.02, latency_ms.x2 = 0.0031),
    mlp_large FROM '../fashion/models/mlp-large.onnx' WITH (accuracy = 89.45, latency_ms.x2 = 0.0090),
    cnn FROM '../fashion/models/cnn.onnx' WITH (accuracy = 90.27, latency_ms.x2 = 0.0166)
  );

CREATE STREAM frames (id BIGINT, ts TIMESTAMP, image TENSOR(FLOAT, 1, 28, 28), true_label VARCHAR, true_group VARCHAR)
  FROM FILE '../fashion/data/shelf.arrow'
  FORMAT ARROW;

CREATE SINK alerts
  TO NATS 'alerts';

INSERT INTO alerts
SELECT id, c.label
FROM frames
CROSS JOIN LATERAL classify(image) AS c(label, score)
WHERE c.score > 0.8
WITH (
  ACCURACY >= 85,
  THROUGHPUT >= 40 PER SECOND,
  LATENCY <= 200 MS PERCENTILE 99,
  BUDGET <= 12.5 PER HOUR,
  PRIORITY REALTIME
);

SELECT true_group, count(*) AS n
FROM frames
GROUP BY true_group, TUMBLE(ts, INTERVAL '1' MINUTE)
WITH (THROUGHPUT >= 600 PER MINUTE, LATENCY <= 2 SECOND, PRIORITY BEST_EFFORT);

EXPLAIN
SELECT *
FROM frames;

EXPLAIN ANALYZE
SELECT id
FROM frames
WITH (THROUGHPUT >= 10 PER SECOND);

EXPLAIN (FORMAT JSON)
INSERT INTO alerts
SELECT id, 'x'
FROM frames;

EXPLAIN (FORMAT TEXT, STRATEGY exhaustive, FRONTIER)
SELECT id, c.label
FROM frames
CROSS JOIN LATERAL classify(image) AS c(label, score)
WITH (ACCURACY >= 85);

EXPLAIN ANALYZE (DURATION 5, ROWS 500, FORMAT TEXT)
SELECT id
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

SET exec.on_error = 'skip';
