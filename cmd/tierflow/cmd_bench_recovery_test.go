package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchRecoveryJSON runs a round of the recovery bench for real: worker
// processes (this test binary as the real CLI), one killed -9 mid-run; the
// round recovers with no row lost or duplicated.
func TestBenchRecoveryJSON(t *testing.T) {
	t.Setenv(childEnv, "real")
	var out, errb bytes.Buffer
	code := run([]string{"bench", "recovery", "--rounds", "1", "--rows", "800", "--rate", "200", "--seed", "3", "--format", "json"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rows []recoveryRow
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1: %s", len(rows), out.String())
	}
	r := rows[0]
	// 200 s of event time: 20 windows of 4 sites.
	if r.Killed == "" || r.Rows != 80 || r.Lost != 0 || r.Duplicated != 0 || r.Recoveries != 1 || r.P50S <= 0 || r.MaxS < r.P50S {
		t.Fatalf("round %+v: want a killed worker, 80 rows, none lost or duplicated, one recovery", r)
	}
	if !strings.Contains(errb.String(), "round 1 killed") {
		t.Errorf("no progress line: %s", errb.String())
	}
}

func TestBenchRecoveryBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--rounds", "0"}, {"--kills", "3"}, {"--placement", "random"}, {"--rate", "-1"}} {
		code, _, errs := runCLI(t, "", append([]string{"bench", "recovery"}, args...)...)
		if code != exitBadInput {
			t.Errorf("%v: exit %d (%s), want %d", args, code, errs, exitBadInput)
		}
	}
}
