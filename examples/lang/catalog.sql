-- Every catalog statement, with every optional clause, over the models and
-- data of examples/fashion and examples/streaming (and two small tables in
-- ./data). The JetStream stream and sink are declared, not read or written:
-- `tierflow publish` feeds such a stream (examples/vqa-live).
--
--   tierflow run examples/lang/catalog.sql
CREATE MODEL IF NOT EXISTS classify TASK 'image-classification'
  INPUTS (image TENSOR(FLOAT, 1, 28, 28))
  OUTPUTS (label VARCHAR, score FLOAT)
  VARIANTS (
    logreg FROM '../fashion/models/logreg.onnx' WITH (accuracy = 84.19, output_kb = 0.02, latency_ms.x2 = 0.0019),
    cnn FROM '../fashion/models/cnn.onnx' WITH (accuracy = 90.27, output_kb = 0.02, latency_ms.x2 = 0.0166)
  )
  WITH (output_ratio = 1);

CREATE STREAM IF NOT EXISTS frames (id BIGINT, ts TIMESTAMP, ok BOOLEAN, temp DOUBLE, note VARCHAR, raw BLOB, image TENSOR(FLOAT, 1, 28, 28))
  FROM JETSTREAM 'site.frames'
  FORMAT ARROW
  AT TIER edge LOCATIONS 4
  RATE 600 PER MINUTE
  WITH (item_kb = 3.1, source_max_delay_ms = 50);

CREATE STREAM readings (sensor INT, ts TIMESTAMP, temperature DOUBLE, humidity DOUBLE)
  FROM FILE '../streaming/readings.csv'
  FORMAT CSV;

CREATE TABLE cameras (camera INT, site VARCHAR, lat DOUBLE, lon DOUBLE)
  FROM FILE 'data/cameras.parquet'
  FORMAT PARQUET;

CREATE TABLE labels
  FROM FILE 'data/labels.json'
  FORMAT JSON;

CREATE SINK console
  TO STDOUT;

CREATE SINK IF NOT EXISTS archive
  TO FILE 'out/detections.parquet'
  FORMAT PARQUET;

CREATE SINK events
  TO JETSTREAM 'site.events'
  FORMAT JSON;

DESCRIBE labels;

INSERT INTO console
SELECT c.site, count(*) AS n, round(avg(r.temperature), 2) AS avg_temp
FROM readings AS r
JOIN cameras AS c ON r.sensor = c.camera
GROUP BY c.site;

SELECT label, "group"
FROM labels
WHERE class < 3;

DROP MODEL classify;

DROP STREAM IF EXISTS frames;

DROP TABLE cameras;

DROP SINK IF EXISTS console;
