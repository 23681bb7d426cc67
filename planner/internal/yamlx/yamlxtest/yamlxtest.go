// Package yamlxtest holds the test check both YAML loaders' fuzzers share:
// a broken file's error is of the loader's kind and names, on every line,
// the file and (when known) the line and column it blames. It lives apart
// from yamlx so that no loader links the testing package.
package yamlxtest

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

// FuzzFile is the file name the loaders' fuzzers parse under.
const FuzzFile = "fuzz.yaml"

// problemLine is how every problem of a broken file reads: the file, the
// line and column when known, then the message.
var problemLine = regexp.MustCompile(`^` + regexp.QuoteMeta(FuzzFile) + `(:\d+:\d+)?: \S`)

// CheckProblems fails t unless err wraps kind and each of its lines names
// FuzzFile and where, as yamlx reports every problem of a file at once.
func CheckProblems(t testing.TB, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("error is not %v: %v", kind, err)
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if !problemLine.MatchString(line) {
			t.Fatalf("problem does not name the file and position: %q", line)
		}
	}
}
