package operators

import (
	"encoding/json"
	"testing"
)

func TestBenchOperatorsPrintsJSONRows(t *testing.T) {
	code, out, errs := runCLI(t, "", "bench", "operators", "--rows", "20000", "--batch", "4096", "--repeats", "1", "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rows) != 5 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if r["engine_rows_per_s"].(float64) <= 0 || r["overhead"].(float64) <= 0 {
			t.Fatalf("%v", r)
		}
	}
}
