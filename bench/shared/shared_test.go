package shared

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestBenchSharedJSON runs the shared-worker bench for real, briefly
// (one second of frames; the best-effort query warms up a tenth of a
// second, not the second the bench gives it: what it checks holds from
// the first batch, and its best-effort query runs every core the while):
// one JSON row per policy asked for,
// with the real-time latencies of the runs that have the real-time query and
// the best-effort throughput of the runs that have the best-effort one.
func TestBenchSharedJSON(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"bench", "shared", "--rounds", "1", "--duration", "1s", "--warmup", "100ms", "--rate", "20", "--be-rows", "40000",
		"--policies", "rt-alone,be-alone,deepquery", "--images", "../../examples/fashion/data/shelf.arrow", "--format", "json"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rows []sharedRow
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	// The round's three runs, then the medians over the one round.
	if len(rows) != 6 || rows[0].Policy != "rt-alone" || rows[1].Policy != "be-alone" || rows[2].Policy != "deepquery" {
		t.Fatalf("rows %+v", rows)
	}
	for i, r := range rows[3:] {
		if r.Round != 0 || r.Stat != "median of 1" || r.Policy != rows[i].Policy || r.RTP99 != rows[i].RTP99 || r.BEItems != rows[i].BEItems {
			t.Errorf("median row %+v of %+v", r, rows[i])
		}
	}
	if rows[5].Met == "" || rows[3].Met != "" {
		t.Errorf("goals met: deepquery %q, rt-alone %q: want them said for deepquery only", rows[5].Met, rows[3].Met)
	}
	// The trace took the real-time latency apart: every row has a model run.
	if rows[0].RTOrtP99 <= 0 || rows[2].RTOrtP99 <= 0 || rows[0].RTBeside != 0 || rows[0].LoadAvg == "" {
		t.Errorf("rt-alone %+v, deepquery %+v: want model-run p99s, no best-effort beside rt-alone, a load average", rows[0], rows[2])
	}
	// Every real-time row is answered or dropped before compute as past
	// its LATENCY (a miss).
	if int64(rows[0].RTRows)+rows[0].RTDropped != 20 || rows[0].RTP50 <= 0 || rows[0].RTP99 < rows[0].RTP50 || rows[0].BEItems != 0 {
		t.Errorf("rt-alone %+v: want 20 latencies and no best-effort rows", rows[0])
	}
	if rows[1].RTRows != 0 || rows[1].BEItems <= 0 || rows[1].BERatio != 1 {
		t.Errorf("be-alone %+v: want best-effort throughput only", rows[1])
	}
	if int64(rows[2].RTRows)+rows[2].RTDropped != 20 || rows[2].BEItems <= 0 || rows[2].RTP99Ratio <= 0 || rows[2].BERatio <= 0 {
		t.Errorf("deepquery %+v: want both measures and their ratios", rows[2])
	}
}

// TestBenchSharedTooFewBestEffortRows: a --be-rows the best-effort query
// reads before the run ends is bad input that says so and what would do
// (it aborted with "...: <nil>").
func TestBenchSharedTooFewBestEffortRows(t *testing.T) {
	code, _, errs := runCLI(t, "", "bench", "shared", "--rounds", "1", "--duration", "1s", "--rate", "20", "--be-rows", "100",
		"--policies", "be-alone", "--images", "../../examples/fashion/data/shelf.arrow")
	if code != exitBadInput || strings.Contains(errs, "<nil>") || !strings.Contains(errs, "raise --be-rows to more than") {
		t.Fatalf("exit %d, want %d and what --be-rows would do:\n%s", code, exitBadInput, errs)
	}
}

func TestBenchSharedBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--rate", "0"}, {"--duration", "10ms"}, {"--policies", "fifo"}, {"--images", "no-such.arrow"}, {"--rounds", "0"}, {"--quantile", "2"}, {"--warmup", "-1s"}} {
		code, _, errs := runCLI(t, "", append([]string{"bench", "shared"}, args...)...)
		if code != exitBadInput {
			t.Errorf("%v: exit %d (%s), want %d", args, code, errs, exitBadInput)
		}
	}
}

// The verdict is the median over rounds of each round's ratios to its own
// alone runs, whatever order the round ran its policies in; one stalled
// round does not decide it.
func TestBenchSharedMedians(t *testing.T) {
	policies := []string{"rt-alone", "be-alone", "deepquery"}
	var rows []sharedRow
	for round, c := range []struct{ aloneP99, dqP99, aloneMiss, dqMiss, aloneBE, dqBE float64 }{
		{20, 21, 0, 0.005, 1000, 600},
		{20, 200, 0, 0.2, 1000, 100}, // the machine stalled this round
		{40, 42, 0.01, 0.015, 800, 480},
	} {
		// Rotated as the bench runs them.
		run := []sharedRow{
			{Round: round + 1, Policy: "deepquery", RTRows: 100, RTP99: c.dqP99, RTMiss: c.dqMiss, BEItems: c.dqBE},
			{Round: round + 1, Policy: "rt-alone", RTRows: 100, RTP99: c.aloneP99, RTMiss: c.aloneMiss},
			{Round: round + 1, Policy: "be-alone", BEItems: c.aloneBE},
		}
		rows = append(rows, againstAlone(run, policies)...)
	}
	if rows[0].Policy != "rt-alone" || rows[2].Policy != "deepquery" || rows[2].RTP99Ratio != 1.05 || rows[2].BERatio != 0.6 {
		t.Fatalf("round 1 %+v", rows[:3])
	}
	med := sharedMedians(rows, policies)
	if len(med) != 3 {
		t.Fatalf("medians %+v", med)
	}
	dq := med[2]
	if dq.Policy != "deepquery" || dq.Round != 0 || dq.Stat != "median of 3" || dq.RTP99Ratio != 1.05 ||
		math.Abs(dq.RTMissDelta-0.005) > 1e-9 || dq.BERatio != 0.6 || dq.RTP99 != 42 {
		t.Fatalf("deepquery medians %+v: want p99 1.05x, miss +0.5 points, best effort 0.6x, p99 42 ms", dq)
	}
	if dq.Met != "p99 yes, miss yes, be yes" || med[0].Met != "" {
		t.Fatalf("goals met %q (rt-alone %q)", dq.Met, med[0].Met)
	}
	var out bytes.Buffer
	if err := printSharedTables(&out, append(rows, med...)); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "median of 3") || !strings.Contains(s, "p99 yes, miss yes, be yes") || strings.Count(s, "deepquery") != 4 {
		t.Fatalf("tables:\n%s", s)
	}
	if m := median([]float64{3, 1, 2, 10}); m != 2.5 {
		t.Fatalf("median of 4: %v", m)
	}
}
