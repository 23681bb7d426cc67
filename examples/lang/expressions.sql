-- Expressions: operator precedence, CASE, CAST, field access, indexing,
-- literals of every kind, over the Fashion-MNIST shelf of examples/fashion.
-- Field access and indexing parse (c.box[0], embed(frame).vector[1],
-- (ts).epoch) but the binder refuses them ("not supported yet") until it has
-- struct and list values, so they are shown here only:
--   SELECT d.box[2] - d.box[0] AS width, (ts).epoch FROM frames ...
--
--   tierflow run examples/lang/expressions.sql
CREATE MODEL classify TASK 'image-classification'
  INPUTS (image TENSOR(FLOAT, 1, 28, 28))
  OUTPUTS (label VARCHAR, score FLOAT)
  VARIANTS (logreg FROM '../fashion/models/logreg.onnx' WITH (accuracy = 84.19));

CREATE STREAM t (id BIGINT, ts TIMESTAMP, image TENSOR(FLOAT, 1, 28, 28), true_label VARCHAR, true_group VARCHAR)
  FROM FILE '../fashion/data/shelf.arrow'
  FORMAT ARROW;

SELECT
  id > 2 OR id < 1 AND NOT id = 0,
  (id > 2 OR id < 1) AND id = 0,
  NOT id = 1,
  -id * (id + 1) % 3,
  -(-id),
  true_group || '-' || true_label,
  id <> 1,
  id <> 1,
  id <= 1,
  id >= 1,
  id < 1,
  id > 1,
  true_label IS NULL,
  true_label IS NOT NULL,
  id NOT BETWEEN 1 AND 10,
  true_label NOT LIKE 'S%',
  CASE WHEN c.score > 0.9 THEN 'high' WHEN c.score > 0.5 THEN 'mid' ELSE 'low' END AS band,
  CASE c.label WHEN 'Bag' THEN 1 WHEN 'Coat' THEN 2 END AS code,
  CAST(c.score AS DOUBLE),
  CAST(id AS VARCHAR),
  1.5e3,
  .25,
  42,
  TRUE,
  FALSE,
  NULL,
  INTERVAL '250' MILLISECOND,
  INTERVAL '1' HOUR,
  INTERVAL '2' DAY,
  TIMESTAMP '2026-11-22T00:00:00Z'
FROM t
CROSS JOIN LATERAL classify(image) AS c(label, score)
LIMIT 3;
