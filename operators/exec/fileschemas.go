package exec

import (
	"fmt"

	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/catalog"
)

// FileSchemas is the catalog's schema inference (catalog.FileSchemas) over
// the file sources, for tables and file streams declared without columns.
// A relative path resolves as the executor resolves it when it reads the
// file (ResolvePath from BaseDir, the script's directory), so the columns
// the planner binds are those of the file that runs.
type FileSchemas struct {
	BaseDir string
	// Confine, when set, vets the file before it is read, as
	// Options.Confine does when the query runs: a submitted script's
	// schema probe reads no file outside its reader's data roots.
	Confine func(path string) (string, error)
}

// FileColumns reads path's schema (sources.InferSchema) as query columns.
func (f FileSchemas) FileColumns(path, format, declaredIn string) ([]catalog.Column, error) {
	p := ResolvePath(path, f.BaseDir, declaredIn)
	if f.Confine != nil {
		var err error
		if p, err = f.Confine(unclean(path, p)); err != nil {
			return nil, err
		}
	}
	if isPattern(path) {
		// A glob stream's partitions share the first one's columns.
		files, err := PartitionFiles(p)
		if err != nil {
			return nil, err
		}
		p = files[0]
	}
	schema, err := sources.InferSchema(p, format)
	if err != nil {
		return nil, err
	}
	cols := make([]catalog.Column, schema.NumFields())
	for i, fld := range schema.Fields() {
		t, err := catalog.TypeName(fld)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", sources.ErrBadFile, p, err)
		}
		cols[i] = catalog.Column{Name: fld.Name, Type: t}
	}
	return cols, nil
}
