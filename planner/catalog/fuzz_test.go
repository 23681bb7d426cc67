package catalog

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

// problemLine is how every problem of a broken file reads: the file, the
// line and column when known, then the message.
var problemLine = regexp.MustCompile(`^fuzz\.yaml(:\d+:\d+)?: \S`)

// FuzzParse: whatever bytes a catalog file holds, Parse returns a
// catalog or ErrInvalid with every problem on its own line naming
// the file (and the line and column it blames), never a panic. The seeds
// (testdata/fuzz/FuzzParse) are small valid and broken files: bad YAML,
// wrong types, unknown keys, missing fields, bad types and shapes, aliases;
// the fuzzer's mutator stalls on files the size of the examples.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, src []byte) {
		c, err := Parse("fuzz.yaml", src)
		if err == nil {
			if c == nil {
				t.Fatal("no catalog and no error")
			}
			return
		}
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("error is not ErrInvalid: %v", err)
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if !problemLine.MatchString(line) {
				t.Fatalf("problem does not name the file and position: %q", line)
			}
		}
	})
}
