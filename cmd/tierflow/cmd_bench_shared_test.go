package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestBenchSharedJSON runs the shared-worker bench for real, briefly
// (one second of frames): one JSON row per policy asked for,
// with the real-time latencies of the runs that have the real-time query and
// the best-effort throughput of the runs that have the best-effort one.
func TestBenchSharedJSON(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"bench", "shared", "--duration", "1s", "--rate", "20", "--be-rows", "40000",
		"--policies", "rt-alone,be-alone,deepquery", "--images", "../../examples/fashion/data/shelf.arrow", "--format", "json"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rows []sharedRow
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(rows) != 3 || rows[0].Policy != "rt-alone" || rows[1].Policy != "be-alone" || rows[2].Policy != "deepquery" {
		t.Fatalf("rows %+v", rows)
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

func TestBenchSharedBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--rate", "0"}, {"--duration", "10ms"}, {"--policies", "fifo"}, {"--images", "no-such.arrow"}, {"--rounds", "0"}, {"--quantile", "2"}} {
		code, _, errs := runCLI(t, "", append([]string{"bench", "shared"}, args...)...)
		if code != exitBadInput {
			t.Errorf("%v: exit %d (%s), want %d", args, code, errs, exitBadInput)
		}
	}
}
