package benchtest_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoProductPackageImportsBench: no package outside bench/ imports a
// bench package (their tests included), but cmd/tierflow, whose bench
// command registers them. The harnesses, baselines and bench-only helpers
// stay out of the product's packages. (Here, not in a test binary of
// package bench's own: one link fewer.)
func TestNoProductPackageImportsBench(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel == "bench" || rel == "cmd/tierflow" || path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if p == "github.com/tierflow/tierflow/bench" || strings.HasPrefix(p, "github.com/tierflow/tierflow/bench/") {
				t.Errorf("%s imports %s: bench code belongs under bench/, registered by cmd/tierflow", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked only %d Go files", checked)
	}
}
