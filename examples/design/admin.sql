-- The administrative statements of DESIGN.md's sketch.
EXPLAIN (FORMAT DOT, STRATEGY exhaustive)
SELECT camera, label
FROM shelves
CROSS JOIN LATERAL classify(image) AS c(label, score)
WHERE score > 0.8;

SHOW MODELS;

SHOW WORKERS;

SHOW QUERIES;

STOP QUERY q3;

SET planner.beam_width = 8;
