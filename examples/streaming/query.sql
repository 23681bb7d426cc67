-- Streaming example: per-site temperature statistics in 10-second tumbling
-- windows of event time, joining a stream of sensor readings with a table of
-- sensor sites. Each window prints as soon as the watermark passes its end.
--
--   tierflow run examples/streaming/query.sql
--   tierflow run --output out.parquet --format parquet examples/streaming/query.sql
CREATE STREAM readings (sensor INT, ts TIMESTAMP, temperature DOUBLE, humidity DOUBLE)
  FROM FILE 'readings.csv'
  FORMAT CSV;

CREATE TABLE sensors (sensor INT, site VARCHAR)
  FROM FILE 'sensors.csv'
  FORMAT CSV;

SELECT
  s.site,
  window_start,
  window_end,
  count(*) AS readings,
  round(avg(r.temperature), 2) AS avg_temp,
  max(r.humidity) AS max_humidity
FROM readings AS r
JOIN sensors AS s ON r.sensor = s.sensor
WHERE r.temperature BETWEEN -40 AND 60
GROUP BY s.site, TUMBLE(r.ts, INTERVAL '10' SECOND);
