-- The administrative statements of DESIGN.md's sketch, around the shelf
-- model and stream of shelves.sql (with latency profiles for the x2 workers
-- of examples/fashion/infra.yaml, so that the planner can place the model).
--
--   tierflow run --infra examples/fashion/infra.yaml examples/design/admin.sql
--
-- The sketch's STOP QUERY q3 stops a query running beside the session
-- (tierflow submit to a cluster; SHOW QUERIES names them): a script's queries
-- run in the foreground, one after another, so there is none to stop here.
CREATE MODEL classify TASK 'image-classification'
  INPUTS (image TENSOR(FLOAT, 1, 28, 28))
  OUTPUTS (label VARCHAR, score FLOAT)
  VARIANTS (
    small FROM '../fashion/models/logreg.onnx' WITH (accuracy = 84.19, latency_ms.x2 = 0.0019),
    large FROM '../fashion/models/cnn.onnx' WITH (accuracy = 90.27, latency_ms.x2 = 0.0166)
  );

CREATE STREAM shelves (id BIGINT, ts TIMESTAMP, image TENSOR(FLOAT, 1, 28, 28))
  FROM FILE '../fashion/data/shelf.arrow'
  FORMAT ARROW
  AT TIER edge
  RATE 40 PER SECOND;

SET planner.beam_width = 8;

EXPLAIN (FORMAT DOT, STRATEGY exhaustive)
SELECT id, label
FROM shelves
CROSS JOIN LATERAL classify(image) AS c(label, score)
WHERE score > 0.8;

SHOW MODELS;

SHOW WORKERS;

SELECT id, label, round(score, 3) AS score
FROM shelves
CROSS JOIN LATERAL classify(image) AS c(label, score)
LIMIT 3;

SHOW QUERIES;
