package infra

import (
	"testing"

	"github.com/tierflow/tierflow/planner/internal/yamlx/yamlxtest"
)

// FuzzParse: whatever bytes an infrastructure file holds, Parse returns an
// infrastructure or ErrInvalid with every problem on its own line naming
// the file (and the line and column it blames), never a panic. The seeds
// (testdata/fuzz/FuzzParse) are small valid and broken files: bad YAML,
// wrong types, unknown keys, missing fields, unknown references, aliases;
// the fuzzer's mutator stalls on files the size of the examples.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, src []byte) {
		in, err := Parse(yamlxtest.FuzzFile, src)
		if err == nil {
			if in == nil {
				t.Fatal("no infrastructure and no error")
			}
			return
		}
		yamlxtest.CheckProblems(t, err, ErrInvalid)
	})
}
