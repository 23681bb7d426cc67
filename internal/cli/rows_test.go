package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

type benchRow struct {
	Variant  string  `json:"variant"`
	Batch    int     `json:"batch"`
	Overhead float64 `json:"overhead"`
	hidden   int
}

func TestPrintRowsTableAndJSONCarrySameFields(t *testing.T) {
	rows := []benchRow{{"small", 8, 0.0312, 1}, {"large", 64, 1.5, 2}}

	var tab bytes.Buffer
	if err := PrintRows(&tab, "table", rows); err != nil {
		t.Fatal(err)
	}
	out := strings.ToLower(tab.String())
	for _, want := range []string{"variant", "batch", "overhead", "small", "large", "0.0312", "1.500"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, tab.String())
		}
	}
	if strings.Contains(out, "hidden") {
		t.Errorf("unexported field leaked into the table:\n%s", out)
	}

	var js bytes.Buffer
	if err := PrintRows(&js, "json", rows); err != nil {
		t.Fatal(err)
	}
	var back []map[string]any
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("json rows do not parse: %v\n%s", err, js.String())
	}
	if len(back) != 2 || back[1]["variant"] != "large" || back[1]["batch"] != float64(64) {
		t.Fatalf("json rows wrong: %v", back)
	}
}

func TestPrintRowsUnknownFormatIsBadInput(t *testing.T) {
	err := PrintRows(&bytes.Buffer{}, "xml", []benchRow{})
	var bi BadInputError
	if !errors.As(err, &bi) {
		t.Fatalf("want bad input error, got %v", err)
	}
}
