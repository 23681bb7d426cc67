package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestBenchRelayJSON(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"bench", "relay", "--rows", "16,512", "--mb", "1", "--rounds", "1", "--latency", "5", "--format", "json"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rows []map[string]any
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(rows) != 4 || rows[0]["case"] != "nats/16" || rows[3]["case"] != "inproc/512" {
		t.Fatalf("rows %v", rows)
	}
	for _, k := range []string{"batches_s", "relay_mb_s", "raw_mb_s", "ratio", "p50_us", "p99_us"} {
		v, ok := rows[0][k].(float64)
		if !ok || v <= 0 {
			t.Errorf("row lacks a positive %q: %v", k, rows[0])
		}
	}
	if !strings.Contains(errb.String(), "ratio") {
		t.Errorf("no progress lines: %s", errb.String())
	}
}

func TestBenchRelayBadInput(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"bench", "relay", "--rows", "0"}, nil, &out, &errb); code != exitBadInput {
		t.Errorf("zero rows: exit %d", code)
	}
	if code := run([]string{"bench", "relay", "--mb", "-1"}, nil, &out, &errb); code != exitBadInput {
		t.Errorf("negative mb: exit %d", code)
	}
	if code := run([]string{"bench", "relay", "--format", "xml"}, nil, &out, &errb); code != exitBadInput {
		t.Errorf("bad format: exit %d", code)
	}
}
