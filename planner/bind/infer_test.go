package bind_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
)

// fileSchemas stands in for operators/exec.FileSchemas (the planner must not
// read files itself); the CLI tests run the real one.
type fileSchemas map[string][]catalog.Column

func (f fileSchemas) FileColumns(path, _, _ string) ([]catalog.Column, error) {
	if cols, ok := f[path]; ok {
		return cols, nil
	}
	return nil, errors.New(path + ": no such file")
}

func bindScript(t *testing.T, cat *catalog.Catalog, src string) error {
	t.Helper()
	script, err := lang.Parse("q.sql", src)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range script.Statements {
		if ok, err := bind.Apply(cat, st); ok {
			if err != nil {
				return err
			}
			continue
		}
		if _, err := bind.New(cat).Bind(st); err != nil {
			return err
		}
	}
	return nil
}

// A table or file stream without columns binds with its file's (inferred at
// the CREATE, or where a catalog YAML declared none, at the FROM); without
// a way to read files it is an error at the statement, not the nil
// dereference it was.
func TestColumnsInferredFromFiles(t *testing.T) {
	files := fileSchemas{"x.csv": {{Name: "a", Type: "BIGINT"}, {Name: "at", Type: "TIMESTAMP"}}}
	cat := &catalog.Catalog{Files: files}
	if err := bindScript(t, cat, "CREATE TABLE t FROM FILE 'x.csv';\nCREATE STREAM s FROM FILE 'x.csv';\nSELECT a + 1 AS b FROM t;\nSELECT max(a) FROM s GROUP BY TUMBLE(at, INTERVAL '1' SECOND);\n"); err != nil {
		t.Fatal(err)
	}
	if c := cat.Table("t").Columns; len(c) != 2 || c[1].Type != "TIMESTAMP" {
		t.Fatalf("table columns %v", c)
	}
	err := bindScript(t, cat, "CREATE TABLE u FROM FILE 'nope.csv';")
	if err == nil || !strings.HasPrefix(err.Error(), "q.sql:1:1: ") || !strings.Contains(err.Error(), "nope.csv") {
		t.Fatalf("missing file: %v", err)
	}
	err = bindScript(t, cat, "CREATE STREAM n FROM NATS 'subj';")
	if !errors.Is(err, catalog.ErrNoColumns) || !strings.Contains(err.Error(), "needs a column list") {
		t.Fatalf("NATS stream without columns: %v", err)
	}

	// A catalog YAML table without columns: inferred where it is used.
	yamlCat := &catalog.Catalog{Tables: []*catalog.Table{{Name: "y", Path: "x.csv"}}}
	err = bindScript(t, yamlCat, "SELECT a FROM y;")
	if !errors.Is(err, catalog.ErrNoColumns) || !strings.HasPrefix(err.Error(), "q.sql:1:15: ") {
		t.Fatalf("no inference: %v", err)
	}
	yamlCat.Files = files
	if err := bindScript(t, yamlCat, "SELECT a FROM y;"); err != nil {
		t.Fatal(err)
	}
	if len(yamlCat.Table("y").Columns) != 0 {
		t.Error("binding changed the catalog's table")
	}
}
