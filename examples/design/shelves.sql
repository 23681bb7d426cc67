-- The language sketch of DESIGN.md: a shelf-monitoring query that classifies
-- camera frames at the edge and raises alerts per camera and label.
CREATE MODEL classify TASK 'image-classification'
  VARIANTS (
    small FROM 'models/logreg.onnx',
    large FROM 'models/cnn.onnx'
  );

CREATE STREAM shelves (camera INT, ts TIMESTAMP, image TENSOR(FLOAT, 1, 28, 28))
  FROM NATS 'store.frames'
  FORMAT ARROW
  AT TIER edge
  RATE 40 PER SECOND;

CREATE SINK alerts
  TO NATS 'store.alerts'
  FORMAT JSON;

INSERT INTO alerts
SELECT camera, window_end, label, count(*) AS n
FROM shelves
CROSS JOIN LATERAL classify(image) AS c(label, score)
WHERE score > 0.8
GROUP BY camera, label, TUMBLE(ts, INTERVAL '10' SECOND)
WITH (ACCURACY >= 0.85, THROUGHPUT >= 40 PER SECOND);
