-- EXPLAIN ANALYZE of the cascade: the labelled stream is replayed at its
-- catalog rate (100 images a second) for 20 seconds on an embedded cluster of
-- infra.yaml, and the run is held against the plan the optimizer made for
-- it: throughput against THROUGHPUT, measured network cost against the
-- estimate, and per operator, worker and tier link.
--
--   tierflow run --catalog examples/fashion/catalog.yaml --infra examples/fashion/infra.yaml examples/fashion/analyze.sql
--   tierflow explain --analyze --duration 20s examples/fashion/cascade.sql   (every query of a script)
EXPLAIN ANALYZE (DURATION 20)
SELECT
  count(*) AS tops,
  sum(CASE WHEN c.label = s.true_label THEN 1 ELSE 0 END) AS correct
FROM labelled AS s
CROSS JOIN LATERAL garment(s.image) AS g(label, score)
CROSS JOIN LATERAL classify(s.image) AS c(label, score)
WHERE g.label = 'tops'
WITH (ACCURACY >= 84, THROUGHPUT >= 100 PER SECOND);
