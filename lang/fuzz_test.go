package lang

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse checks that no input panics, that every error is a positioned
// *Error of kind ErrSyntax, and that every script that parses prints to a
// script that parses back to the same AST. Seeds: every example query and the
// inputs of the golden files.
func FuzzParse(f *testing.F) {
	for _, src := range validScripts(f) {
		f.Add(src)
	}
	files, _ := filepath.Glob("testdata/errors/*.txt")
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		for _, c := range strings.Split(string(b), caseSep) {
			in, _, _ := strings.Cut(c, outSep)
			f.Add(in)
		}
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse("fuzz.sql", src)
		if err != nil {
			var pe *Error
			if !errors.Is(err, ErrSyntax) || !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *Error of kind ErrSyntax", err)
			}
			if pe.Pos.Line < 1 || pe.Pos.Column < 1 || pe.Msg == "" {
				t.Fatalf("error without position or message: %#v", pe)
			}
			_ = pe.Pretty()
			return
		}
		checkRoundTrip(t, "fuzz.sql", s)
	})
}
