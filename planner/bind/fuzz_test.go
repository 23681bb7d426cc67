package bind_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
)

// FuzzBind: whatever parses binds to a plan or to positioned errors of a
// known kind, never a panic. The seeds are the golden cases.
func FuzzBind(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, c := range parseCases(f, string(b)) {
			f.Add(c.input)
		}
	}
	cat, err := catalog.LoadFile("testdata/catalog.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src string) {
		script, err := lang.Parse("q.sql", src)
		if err != nil {
			return
		}
		c := cat.Clone()
		for _, s := range script.Statements {
			if ok, _ := bind.Apply(c, s); ok {
				continue
			}
			if _, isQuery := s.(*lang.Query); !isQuery {
				continue
			}
			plan, err := bind.New(c).Bind(s)
			if err == nil {
				if plan == nil || plan.Root == nil {
					t.Fatalf("%q: no plan and no error", src)
				}
				continue
			}
			var es bind.Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("%q: error %v is not a list of positioned errors", src, err)
			}
			for _, e := range es {
				if e.Pos.Line == 0 || (!errors.Is(e, bind.ErrBind) && !errors.Is(e, bind.ErrUnknown) && !errors.Is(e, bind.ErrNotSupported)) {
					t.Fatalf("%q: error %q has no position or an unknown kind", src, e)
				}
			}
		}
	})
}
