-- Every catalog statement, with every optional clause.
CREATE MODEL IF NOT EXISTS detector TASK 'object-detection'
  INPUTS (frame TENSOR(FLOAT, 3, 640, 640))
  OUTPUTS (box TENSOR(FLOAT, 4), label VARCHAR, score FLOAT)
  VARIANTS (
    yolov5n FROM 'models/yolov5n.onnx' WITH (batch_size = 8, device = 'cpu'),
    yolov5x FROM 'models/yolov5x.onnx' WITH (batch_size = 4, device = 'gpu')
  )
  WITH (max_queue_delay_ms = 5, dynamic_batching = TRUE);

CREATE STREAM IF NOT EXISTS frames (camera INT, seq BIGINT, ts TIMESTAMP, ok BOOLEAN, temp DOUBLE, note VARCHAR, raw BLOB, frame TENSOR(FLOAT, 3, 640, 640))
  FROM JETSTREAM 'site.frames'
  FORMAT ARROW
  AT TIER edge LOCATIONS 4
  RATE 600 PER MINUTE
  WITH (durable = 'tierflow', replay.from = 'start');

CREATE STREAM readings (sensor INT, value FLOAT, at TIMESTAMP)
  FROM FILE 'data/readings.csv'
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
  FORMAT JSON
  WITH (max_age_s = 3600);

DROP MODEL detector;

DROP STREAM IF EXISTS frames;

DROP TABLE cameras;

DROP SINK IF EXISTS console;
