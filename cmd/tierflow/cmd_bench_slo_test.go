package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func TestBenchSLORejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("t_s,kbit_s\n0,800\n-1,300\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace", bad}, bad + ":3: bad bandwidth trace"},
		{[]string{"--policy", "fastest"}, `unknown --policy "fastest"`},
		{[]string{"--clients", "0"}, "--clients and --workers must be at least 1"},
		{[]string{"--encode", "png"}, `unknown --encode "png"`},
		{[]string{"--zoo", filepath.Join(dir, "none.yaml")}, "none.yaml"},
	} {
		code, _, errs := runCLI(t, "", append([]string{"bench", "slo"}, c.args...)...)
		if code != exitBadInput || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, errs, exitBadInput, c.want)
		}
	}
}

// TestBenchSLORuns runs the bench briefly on the real engine pieces and
// checks its JSON rows (the numbers are the README's, from a full run).
func TestBenchSLORuns(t *testing.T) {
	dir := filepath.Join("..", "..")
	code, out, errs := runCLI(t, "", "bench", "slo", "--duration", "3s", "--clients", "2", "--policy", "adaptive,static-largest",
		"--zoo", filepath.Join(dir, "examples", "fashion", "sizes.yaml"), "--data", filepath.Join(dir, "examples", "fashion", "data"), "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(rows) != 2 || rows[0]["policy"] != "adaptive" || rows[1]["policy"] != "static-largest" {
		t.Fatalf("rows %v", rows)
	}
	var keys []string
	for k := range rows[0] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if got := strings.Join(keys, ","); got != "accuracy,clients,p50_ms,p99_ms,policy,requests,slo_miss_rate,slo_ms" {
		t.Fatalf("fields %s", got)
	}
	for _, r := range rows {
		if r["requests"].(float64) < 80 || r["slo_ms"].(float64) != 100 || r["clients"].(float64) != 2 {
			t.Errorf("row %v", r)
		}
	}
}
