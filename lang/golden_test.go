package lang

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the expected outputs of the golden files under testdata/")

// A golden case file holds cases separated by a line "====". Each case is the
// input, a line "----", then the expected output, so a reader sees both side
// by side. -update rewrites every expected output from what the code does now.
type goldenCase struct{ input, want string }

const (
	caseSep = "\n====\n"
	outSep  = "\n----\n"
)

func readCases(t *testing.T, path string) []goldenCase {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []goldenCase
	for _, c := range strings.Split(strings.TrimSuffix(string(b), "\n"), caseSep) {
		in, want, ok := strings.Cut(c, outSep)
		if !ok {
			in, want = strings.TrimSuffix(c, "\n----"), ""
		}
		out = append(out, goldenCase{input: in, want: want})
	}
	return out
}

func writeCases(t *testing.T, path string, cases []goldenCase) {
	t.Helper()
	var parts []string
	for _, c := range cases {
		parts = append(parts, c.input+outSep+c.want)
	}
	if err := os.WriteFile(path, []byte(strings.Join(parts, caseSep)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runGolden runs fn over every case of every file matching pattern.
func runGolden(t *testing.T, pattern string, fn func(name, input string) string) {
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files match %s (%v)", pattern, err)
	}
	for _, path := range files {
		cases := readCases(t, path)
		for i := range cases {
			got := strings.TrimSuffix(fn(filepath.Base(path), cases[i].input), "\n")
			if *update {
				cases[i].want = got
				continue
			}
			if got != cases[i].want {
				t.Errorf("%s, case %d:\n%s\n--- got:\n%s\n--- want:\n%s", path, i+1, cases[i].input, got, cases[i].want)
			}
		}
		if *update {
			writeCases(t, path, cases)
		}
	}
}

// TestFormatGolden: canonical output of valid scripts.
func TestFormatGolden(t *testing.T) {
	runGolden(t, "testdata/format/*.txt", func(name, input string) string {
		s, err := Parse(name, input)
		if err != nil {
			return "ERROR: " + err.Error()
		}
		return Format(s)
	})
}

// TestErrorGolden: the rendered message, line and caret of invalid scripts.
func TestErrorGolden(t *testing.T) {
	runGolden(t, "testdata/errors/*.txt", func(name, input string) string {
		_, err := Parse(name, input)
		if err == nil {
			return "UNEXPECTED SUCCESS"
		}
		if !errors.Is(err, ErrSyntax) {
			return "NOT ErrSyntax: " + err.Error()
		}
		var pe *Error
		if !errors.As(err, &pe) {
			return "NOT *Error: " + err.Error()
		}
		return pe.Pretty()
	})
}

// TestGrammarGolden keeps the EBNF participle derives from the AST in a file,
// so every grammar change shows up in review.
func TestGrammarGolden(t *testing.T) {
	const path = "testdata/grammar.ebnf"
	got := Grammar() + "\n"
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("grammar changed; run go test ./lang -run TestGrammarGolden -update and review the diff\ngot:\n%s", got)
	}
}

// validScripts are every example query and every format golden input.
func validScripts(t testing.TB) map[string]string {
	out := map[string]string{}
	for _, f := range exampleFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = string(b)
	}
	files, _ := filepath.Glob("testdata/format/*.txt")
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range strings.Split(string(b), caseSep) {
			in, _, _ := strings.Cut(c, outSep)
			out[path+"#"+string(rune('1'+i))] = in
		}
	}
	return out
}

// checkRoundTrip asserts the printer's contract on one valid script:
// parse(print(ast)) == ast without positions, and print is idempotent.
func checkRoundTrip(t testing.TB, name string, s *Script) {
	t.Helper()
	out := Format(s)
	s2, err := Parse(name+" (formatted)", out)
	if err != nil {
		var pe *Error
		if errors.As(err, &pe) {
			t.Fatalf("%s: formatted output does not parse:\n%s\n%s", name, pe.Pretty(), out)
		}
		t.Fatalf("%s: formatted output does not parse: %v\n%s", name, err, out)
	}
	ClearPositions(s)
	ClearPositions(s2)
	if !reflect.DeepEqual(s, s2) {
		t.Fatalf("%s: parse(print(ast)) != ast\nprinted:\n%s\nreprinted:\n%s", name, out, Format(s2))
	}
	if again := Format(s2); again != out {
		t.Fatalf("%s: format is not idempotent:\n%s\n---\n%s", name, out, again)
	}
}

func TestRoundTrip(t *testing.T) {
	for name, src := range validScripts(t) {
		s, err := Parse(name, src)
		if err != nil {
			if strings.Contains(name, "#") {
				continue // a format golden case may show an error on purpose
			}
			t.Fatalf("%s: %v", name, err)
		}
		checkRoundTrip(t, name, s)
	}
}
