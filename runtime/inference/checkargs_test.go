package inference

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// A tensor argument whose declared shape the model file cannot take is a
// bind error at the argument, naming the variant and the input the file
// declares; the fashion models take [1,28,28] (784 floats) a row, so TENSOR(FLOAT, 1,
// 28, 28) binds and TENSOR(FLOAT, 1, 32, 32) does not.
//
// A check-only runtime (the coordinator's) does the same and keeps no
// session: it held the weights of every model file any query named.
func TestCheckModelArgsAgainstTheModelFile(t *testing.T) {
	t.Run("runs", func(t *testing.T) {
		checkModelArgs(t, New(Config{}), filepath.Join(fashionDir, "models", "logreg.onnx"))
	})
	t.Run("check only", func(t *testing.T) {
		// A copy of its own, so that no other test's session serves it.
		path := filepath.Join(t.TempDir(), "logreg.onnx")
		b, err := os.ReadFile(filepath.Join(fashionDir, "models", "logreg.onnx"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		env, err := onnx.Open("")
		if err != nil {
			t.Fatal(err)
		}
		before := env.Cached()
		checkModelArgs(t, New(Config{CheckOnly: true}), path)
		if got := env.Cached(); got != before {
			t.Errorf("%d sessions cached after the checks, want %d", got, before)
		}
	})
}

func checkModelArgs(t *testing.T, rt *Runtime, model string) {
	for _, c := range []struct {
		shape string
		err   bool
	}{{"1, 28, 28", false}, {"784", false}, {"1, 32, 32", true}} {
		cat := &catalog.Catalog{}
		src := "CREATE MODEL classify TASK 'image-classification' OUTPUTS (label VARCHAR, score FLOAT)\n" +
			"  VARIANTS (logreg FROM '" + model + "');\n" +
			"CREATE STREAM s (id BIGINT, image TENSOR(FLOAT, " + c.shape + ")) FROM FILE 'x.arrow' FORMAT ARROW;\n" +
			"SELECT id, c.label\nFROM s CROSS JOIN LATERAL classify(s.image) AS c(label, score);\n"
		script, err := lang.Parse("q.sql", src)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range script.Statements[:2] {
			if _, err := bind.Apply(cat, st); err != nil {
				t.Fatal(err)
			}
		}
		b := bind.New(cat)
		b.CheckModelArgs = rt.CheckModelArgs
		_, err = b.Bind(script.Statements[2])
		if !c.err {
			if err != nil {
				t.Errorf("TENSOR(FLOAT, %s): %v", c.shape, err)
			}
			continue
		}
		var es bind.Errors
		if !errors.As(err, &es) || !errors.Is(err, bind.ErrBind) || es[0].Pos.Line != 5 || es[0].Pos.Col != 36 ||
			!strings.Contains(err.Error(), "model classify variant logreg") || !strings.Contains(err.Error(), "wants [1,28,28]") {
			t.Errorf("TENSOR(FLOAT, %s): got %v, want a bind error at q.sql:5:36", c.shape, err)
		}
		// Without the check the binder cannot know.
		if _, err := bind.New(cat).Bind(script.Statements[2]); err != nil {
			t.Errorf("unchecked: %v", err)
		}
	}
}
