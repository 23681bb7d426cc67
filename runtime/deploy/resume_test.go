package deploy

import (
	"testing"
)

// TestResumeAt: which re-deployed queries may skip what their sinks
// committed, and from where. Epochs and event times are microseconds; the
// windows are 10 s long.
func TestResumeAt(t *testing.T) {
	const streams = `
CREATE STREAM readings (sensor INT, ts TIMESTAMP, temperature DOUBLE, seen TIMESTAMP) FROM FILE 'r.csv' FORMAT CSV;
CREATE STREAM other (sensor INT, ts TIMESTAMP) FROM FILE 'o.csv' FORMAT CSV;
CREATE TABLE sensors (sensor INT, site VARCHAR) FROM FILE 's.csv' FORMAT CSV;
`
	const e = 25_000_000 // 25 s: windows ending before 20 s are committed
	for _, c := range []struct {
		name, query string
		skip, below uint64
	}{
		{"filter and projection", "SELECT sensor, temperature * 2 AS t FROM readings WHERE temperature > 20;", e, 0},
		{"join with a table", "SELECT s.site, r.temperature FROM readings AS r JOIN sensors AS s ON r.sensor = s.sensor;", e, 0},
		{"tumbling windows", "SELECT sensor, count(*) AS n FROM readings GROUP BY sensor, TUMBLE(ts, INTERVAL '10' SECOND);", 0, 20_000_000},
		{"tumbling windows after a table join", `SELECT s.site, count(*) AS n FROM readings AS r JOIN sensors AS s ON r.sensor = s.sensor
WHERE r.temperature > 20 GROUP BY s.site, TUMBLE(r.ts, INTERVAL '10' SECOND);`, 0, 20_000_000},
		{"windows on another time than the watermark's", "SELECT count(*) AS n FROM readings GROUP BY TUMBLE(seen, INTERVAL '10' SECOND);", 0, 0},
		{"hopping windows", "SELECT count(*) AS n FROM readings GROUP BY HOP(ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND);", 0, 0},
		{"an aggregate without windows", "SELECT sensor, count(*) AS n FROM readings GROUP BY sensor;", 0, 0},
		{"a stream-stream join", `SELECT r.sensor FROM readings AS r JOIN other AS o ON r.sensor = o.sensor
AND TUMBLE(r.ts, INTERVAL '10' SECOND) = TUMBLE(o.ts, INTERVAL '10' SECOND);`, 0, 0},
		{"a limit", "SELECT sensor FROM readings LIMIT 5;", 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := Script{Filename: "q.sql", Source: streams + c.query}
			plan, _, err := s.Bind(nil)
			if err != nil {
				t.Fatal(err)
			}
			skip, below := resumeAt(plan.Root, e)
			if skip != c.skip || below != c.below {
				t.Fatalf("resumeAt = (%d, %d), want (%d, %d)\n%s", skip, below, c.skip, c.below, c.query)
			}
		})
	}
}
