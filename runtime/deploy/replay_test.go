package deploy

import (
	"maps"
	"math"
	"testing"

	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/logical"
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

// TestResumeSeqs: where a recovery would start a JetStream stream is the
// last known position before the first window it replays, and nothing
// (the stream's start) until such a position is known or for a query that
// must replay everything.
func TestResumeSeqs(t *testing.T) {
	const streams = `
CREATE STREAM readings (sensor INT, ts TIMESTAMP, temperature DOUBLE) FROM JETSTREAM 'in.readings' FORMAT CSV;
`
	bind := func(q string) *logical.Plan {
		t.Helper()
		plan, _, err := Script{Filename: "q.sql", Source: streams + q}.Bind(nil)
		if err != nil {
			t.Fatal(err)
		}
		return plan
	}
	windows := bind("SELECT sensor, count(*) AS n FROM readings GROUP BY sensor, TUMBLE(ts, INTERVAL '10' SECOND);")
	const e = 25_000_000 // replays the window from 20 s
	pos := map[string]sources.Positions{"readings": {{Seq: 1, MaxTS: math.MinInt64}, {Seq: 40, MaxTS: 9_750_000},
		{Seq: 80, MaxTS: 19_750_000}, {Seq: 84, MaxTS: 20_750_000}}}
	if got := ResumeSeqs(windows, e, pos); !maps.Equal(got, map[string]uint64{"readings": 80}) {
		t.Fatalf("ResumeSeqs = %v, want readings at 80", got)
	}
	// Only the positions a worker reported before its first batch past the
	// window's start: resume at the last of them.
	early := map[string]sources.Positions{"readings": pos["readings"][:2]}
	if got := ResumeSeqs(windows, e, early); !maps.Equal(got, map[string]uint64{"readings": 40}) {
		t.Fatalf("ResumeSeqs = %v, want readings at 40", got)
	}
	if got := ResumeSeqs(windows, e, nil); got != nil {
		t.Fatalf("ResumeSeqs with no positions = %v, want none (the stream's start)", got)
	}
	if got := ResumeSeqs(windows, 0, pos); got != nil {
		t.Fatalf("ResumeSeqs with nothing committed = %v, want none", got)
	}
	sorted := bind("SELECT sensor FROM readings ORDER BY sensor LIMIT 5;")
	if got := ResumeSeqs(sorted, e, pos); got != nil {
		t.Fatalf("ResumeSeqs of a query that replays everything = %v, want none", got)
	}
}
