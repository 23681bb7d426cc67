package relay

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchRelayTable: one mode, the compact table.
func TestBenchRelayTable(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"bench", "relay", "--mode", "in-process", "--rows", "16", "--mb", "1", "--rounds", "1", "--latency", "5"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	s := out.String()
	for _, h := range []string{"MODE", "RELAY MB S", "RAW MB S", "RATIO", "ADDED P 99 US", "in-process", "inproc/16"} {
		if !strings.Contains(s, h) {
			t.Errorf("table lacks %q:\n%s", h, s)
		}
	}
	if strings.Contains(s, "across-processes") {
		t.Errorf("--mode in-process ran across processes:\n%s", s)
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
	errb.Reset()
	if code := run([]string{"bench", "relay", "--mode", "sideways"}, nil, &out, &errb); code != exitBadInput || !strings.Contains(errb.String(), "--mode") {
		t.Errorf("bad mode: exit %d, %s", code, errb.String())
	}
	if code := run([]string{"bench", "relay-peer"}, nil, &out, &errb); code != exitBadInput {
		t.Errorf("relay-peer without --control: exit %d", code)
	}
}
