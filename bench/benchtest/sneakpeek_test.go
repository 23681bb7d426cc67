package benchtest_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/bench/sneakpeek"
)

var runSneakPeek = runner(sneakpeek.Command)

func benchSneakPeek(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	var out, errb bytes.Buffer
	code := runSneakPeek(append([]string{"bench", "sneakpeek", "--dir", filepath.Join("..", "..", "examples", "fashion"), "--format", "json"}, args...), nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "cnn: batch latency") {
		t.Errorf("no latency lines: %s", errb.String())
	}
	var rows []map[string]any
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	return rows
}

// TestBenchSneakPeekEstimates: on the built-in mixes the estimates' order is
// the (mean error k5 <= k1 < profiled). Deterministic: the streams,
// the kNN index and the models' labels do not depend on timing.
func TestBenchSneakPeekEstimates(t *testing.T) {
	errs := map[string]float64{}
	mixes := map[string]bool{}
	for _, r := range benchSneakPeek(t, "--windows", "1") {
		if r["kind"] == "estimate" {
			mixes[r["mix"].(string)] = true
			if r["mix"] == "mean" {
				errs[r["estimator"].(string)] = r["error"].(float64)
			}
		}
	}
	if !(errs["k5"] <= errs["k1"] && errs["k1"] < errs["profiled"]) {
		t.Errorf("mean errors %v: want k5 <= k1 < profiled", errs)
	}
	if len(mixes) != 7 || !mixes["shirts"] {
		t.Errorf("mixes %v: want the six built-in ones and the mean", mixes)
	}
}

// TestBenchSneakPeekJSON runs the benchmark small on a mixes file: both row
// kinds for every mix and the mean, schedule numbers in range.
func TestBenchSneakPeekJSON(t *testing.T) {
	mixes := filepath.Join(t.TempDir(), "mixes.json")
	if err := os.WriteFile(mixes, []byte(`[
  {"name": "coats", "class_freq": [5, 1, 30, 2, 50, 1, 8, 1, 1, 1]},
  {"name": "shoes", "class_freq": [1, 1, 1, 1, 1, 40, 1, 30, 2, 22]}
]`), 0o644); err != nil {
		t.Fatal(err)
	}
	rows := benchSneakPeek(t, "--mixes", mixes, "--rows", "200", "--windows", "4")
	estimates := 0
	policies := map[string]map[string]bool{}
	for _, r := range rows {
		switch r["kind"] {
		case "estimate":
			if _, ok := r["error"].(float64); !ok {
				t.Errorf("estimate row %v", r)
			}
			estimates++
		case "schedule":
			mix := r["mix"].(string)
			if policies[mix] == nil {
				policies[mix] = map[string]bool{}
			}
			policies[mix][r["policy"].(string)] = true
			for _, k := range []string{"utility", "accuracy", "deadline_miss_rate"} {
				if x, ok := r[k].(float64); !ok || x < 0 || x > 1 {
					t.Errorf("row %v: %s", r, k)
				}
			}
		default:
			t.Fatalf("row of kind %v", r["kind"])
		}
	}
	if estimates != 9 {
		t.Errorf("%d estimate rows, want 3 estimators x (2 mixes + mean)", estimates)
	}
	for _, mix := range []string{"coats", "shoes", "mean"} {
		if len(policies[mix]) != 4 || !policies[mix]["sneakpeek"] || !policies[mix]["maxacc-edf"] {
			t.Errorf("mix %s: policies %v", mix, policies[mix])
		}
	}
}

func TestBenchSneakPeekBadInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`[{"name": "x", "class_freq": [1, 2]}]`), 0o644)
	for _, args := range [][]string{
		{"--mixes", bad},
		{"--penalty", "cubic"},
		{"--windows", "0"},
	} {
		var out, errb bytes.Buffer
		if code := runSneakPeek(append([]string{"bench", "sneakpeek"}, args...), nil, &out, &errb); code != exitBadInput {
			t.Errorf("%v: exit %d, want %d: %s", args, code, exitBadInput, errb.String())
		}
		if args[0] == "--mixes" && !strings.Contains(errb.String(), "2 class frequencies, want 10") {
			t.Errorf("mixes error: %s", errb.String())
		}
	}
}
