package benchtest_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/bench/inference"
)

var runInference = runner(inference.Command)

func TestBenchInferenceJSON(t *testing.T) {
	var out, errb bytes.Buffer
	models := filepath.Join("..", "..", "examples", "fashion", "models")
	code := runInference([]string{"bench", "inference", "--models", models, "--variants", "logreg", "--batch", "1,8", "--iters", "5", "--format", "json"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rows []map[string]any
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(rows) != 2 || rows[1]["batch"] != float64(8) || rows[0]["variant"] != "logreg" {
		t.Fatalf("rows %v", rows)
	}
	for _, k := range []string{"engine_ms", "bare_ms", "overhead"} {
		if _, ok := rows[0][k]; !ok {
			t.Errorf("row lacks %q: %v", k, rows[0])
		}
	}
	// Not a terminal: plain progress lines, the last one with the count.
	if !strings.Contains(errb.String(), "logreg batch 8: engine") || !strings.Contains(errb.String(), "2/2 (100%), done in") {
		t.Errorf("no progress lines: %s", errb.String())
	}
}

func TestBenchInferenceBadInput(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runInference([]string{"bench", "inference", "--batch", "0"}, nil, &out, &errb); code != exitBadInput {
		t.Errorf("bad batch: exit %d", code)
	}
	if code := runInference([]string{"bench", "inference", "--models", t.TempDir()}, nil, &out, &errb); code != exitBadInput {
		t.Errorf("empty model dir: exit %d", code)
	}
}
