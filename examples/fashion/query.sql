-- Classify garment images from the shelf cameras and keep the confident ones.
-- The model zoo (./models) offers four variants of `classify`; the planner picks
-- the cheapest that meets the accuracy target and places it.
--   tierflow explain examples/fashion/query.sql
INSERT INTO alerts
SELECT shelf.id, c.label, c.score
FROM shelf
CROSS JOIN LATERAL classify(image) AS c(label, score)
WHERE c.score > 0.9
WITH (ACCURACY >= 89, THROUGHPUT >= 50000 PER SECOND);
