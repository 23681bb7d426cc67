-- A cascade of two classifiers over the labelled Fashion-MNIST stream: a coarse
-- garment-group model keeps the tops, a fine 10-class model names them, and
-- 5-second tumbling windows count each predicted label and measure accuracy
-- against the true labels (then one overall line per query below).
--
--   tierflow run --catalog examples/fashion/catalog.yaml examples/fashion/cascade.sql
--   tierflow explain examples/fashion/cascade.sql
-- Per window and predicted label.
SELECT
  window_start,
  c.label,
  count(*) AS n,
  round(avg(CASE WHEN c.label = s.true_label THEN 1.0 ELSE 0.0 END), 4) AS accuracy
FROM labelled AS s
CROSS JOIN LATERAL garment(s.image) AS g(label, score)
CROSS JOIN LATERAL classify(s.image) AS c(label, score)
WHERE g.label = 'tops'
GROUP BY c.label, TUMBLE(s.ts, INTERVAL '5' SECOND)
WITH (ACCURACY >= 84);

-- Per window, all labels: the measured accuracy of the workflow.
SELECT
  window_start,
  count(*) AS tops,
  sum(CASE WHEN c.label = s.true_label THEN 1 ELSE 0 END) AS correct,
  round(avg(CASE WHEN c.label = s.true_label THEN 1.0 ELSE 0.0 END), 4) AS accuracy
FROM labelled AS s
CROSS JOIN LATERAL garment(s.image) AS g(label, score)
CROSS JOIN LATERAL classify(s.image) AS c(label, score)
WHERE g.label = 'tops'
GROUP BY TUMBLE(s.ts, INTERVAL '5' SECOND)
WITH (ACCURACY >= 84);

-- Overall: the measured accuracy of the workflow on the whole stream.
SELECT
  count(*) AS tops,
  sum(CASE WHEN c.label = s.true_label THEN 1 ELSE 0 END) AS correct,
  round(avg(CASE WHEN c.label = s.true_label THEN 1.0 ELSE 0.0 END), 4) AS accuracy
FROM labelled AS s
CROSS JOIN LATERAL garment(s.image) AS g(label, score)
CROSS JOIN LATERAL classify(s.image) AS c(label, score)
WHERE g.label = 'tops'
WITH (ACCURACY >= 84);
