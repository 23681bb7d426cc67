-- Window functions (OVER) over a table, and over a stream as Flink SQL has
-- them: per row over a bounded frame of event time, and per window of a
-- windowed aggregation. They read the sensor readings of examples/streaming.
--
--   tierflow run examples/lang/windows.sql
CREATE TABLE readings_t (sensor INT, ts TIMESTAMP, temperature DOUBLE, humidity DOUBLE)
  FROM FILE '../streaming/readings.csv'
  FORMAT CSV;

CREATE STREAM readings (sensor INT, ts TIMESTAMP, temperature DOUBLE, humidity DOUBLE)
  FROM FILE '../streaming/readings.csv'
  FORMAT CSV;

CREATE TABLE sensors (sensor INT, site VARCHAR)
  FROM FILE '../streaming/sensors.csv'
  FORMAT CSV;

-- The three hottest readings of each site.
SELECT site, sensor, ts, temperature, rk
FROM (
  SELECT
    s.site,
    r.sensor,
    r.ts,
    r.temperature,
    rank() OVER (PARTITION BY s.site ORDER BY r.temperature DESC) AS rk
  FROM readings_t AS r
  JOIN sensors AS s ON r.sensor = s.sensor
) AS x
WHERE rk <= 3
ORDER BY site, rk;

-- Change since the sensor's previous reading, and a moving average of its
-- last five.
SELECT
  sensor,
  ts,
  temperature - lag(temperature) OVER (PARTITION BY sensor ORDER BY ts) AS change,
  avg(temperature) OVER (PARTITION BY sensor ORDER BY ts ROWS BETWEEN 4 PRECEDING AND CURRENT ROW) AS avg5
FROM readings_t
WHERE sensor = 1
ORDER BY ts
LIMIT 6;

-- On a stream: each reading with its sensor's mean of the last 10 seconds,
-- given when the watermark passes the reading.
SELECT
  sensor,
  ts,
  temperature,
  avg(temperature) OVER (PARTITION BY sensor ORDER BY ts RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW) AS avg_10s
FROM readings
LIMIT 6;

-- Per window: the hottest sensor of each minute.
SELECT window_start, sensor, hottest
FROM (
  SELECT
    window_start,
    sensor,
    max(temperature) AS hottest,
    rank() OVER (PARTITION BY window_start ORDER BY max(temperature) DESC) AS rk
  FROM readings
  GROUP BY sensor, TUMBLE(ts, INTERVAL '1' MINUTE)
) AS w
WHERE rk = 1;
