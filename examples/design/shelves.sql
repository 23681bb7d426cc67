-- The language sketch of DESIGN.md: a shelf-monitoring query that classifies
-- camera frames at the edge and raises alerts per camera and label. The
-- sketch reads the frames FROM NATS 'store.frames' (tierflow publish feeds
-- such a subject); here they are the Fashion-MNIST shelf of examples/fashion,
-- four cameras taking turns, and the alerts go to NATS.
--
--   tierflow run examples/design/shelves.sql
CREATE MODEL classify TASK 'image-classification'
  INPUTS (image TENSOR(FLOAT, 1, 28, 28))
  OUTPUTS (label VARCHAR, score FLOAT)
  VARIANTS (
    small FROM '../fashion/models/logreg.onnx' WITH (accuracy = 84.19),
    large FROM '../fashion/models/cnn.onnx' WITH (accuracy = 90.27)
  );

CREATE STREAM shelves (id BIGINT, ts TIMESTAMP, image TENSOR(FLOAT, 1, 28, 28))
  FROM FILE '../fashion/data/shelf.arrow'
  FORMAT ARROW
  AT TIER edge
  RATE 40 PER SECOND;

CREATE SINK alerts
  TO NATS 'store.alerts'
  FORMAT JSON;

INSERT INTO alerts
SELECT id % 4 AS camera, window_end, label, count(*) AS n
FROM shelves
CROSS JOIN LATERAL classify(image) AS c(label, score)
WHERE score > 0.8
GROUP BY id % 4, label, TUMBLE(ts, INTERVAL '10' SECOND)
WITH (ACCURACY >= 85, THROUGHPUT >= 40 PER SECOND, LATENCY <= 200 MS);
