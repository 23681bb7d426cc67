package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A declared tensor shape the model file cannot take is bad input (exit 2)
// at the call's argument when the query binds, locally and on the cluster,
// before any row is read.
func TestRunChecksDeclaredShapesAgainstTheModel(t *testing.T) {
	model, err := filepath.Abs("../../examples/fashion/models/logreg.onnx")
	if err != nil {
		t.Fatal(err)
	}
	q := filepath.Join(t.TempDir(), "q.sql")
	os.WriteFile(q, []byte(`CREATE MODEL m TASK 'image-classification' OUTPUTS (label VARCHAR, score FLOAT)
  VARIANTS (v FROM '`+model+`');
CREATE STREAM s (id BIGINT, ts TIMESTAMP, image TENSOR(FLOAT, 1, 32, 32)) FROM FILE 'nowhere.arrow' FORMAT ARROW;
SELECT id, c.label FROM s CROSS JOIN LATERAL m(s.image) AS c(label, score);
`), 0o644)
	for _, mode := range [][]string{{"--local"}, nil} {
		code, out, errs := runCLI(t, "", append(append([]string{"run"}, mode...), q)...)
		if code != exitBadInput || !strings.Contains(errs, "q.sql:4:48: model m variant v") || !strings.Contains(errs, "wants [1,28,28]") ||
			strings.Contains(errs, "nowhere.arrow") {
			t.Fatalf("%v: exit %d: %s", mode, code, errs)
		}
		if out != "" {
			t.Errorf("%v: printed %q", mode, out)
		}
	}
}
