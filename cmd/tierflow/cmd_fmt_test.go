package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func readGolden(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFmtFilePrintsCanonicalForm(t *testing.T) {
	code, out, errs := runCLI(t, "", "fmt", "testdata/fmt/messy.sql")
	if code != exitOK || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if want := readGolden(t, "testdata/fmt/messy.golden"); out != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
	// The canonical form is a fixed point.
	code, again, _ := runCLI(t, out, "fmt")
	if code != exitOK || again != out {
		t.Errorf("fmt of canonical output changed it (exit %d):\n%s", code, again)
	}
}

func TestFmtSyntaxErrorExits2WithCaret(t *testing.T) {
	code, out, errs := runCLI(t, "", "fmt", "testdata/fmt/typo.sql")
	if code != exitBadInput {
		t.Fatalf("exit %d, want %d", code, exitBadInput)
	}
	if out != "" {
		t.Errorf("stdout should be empty, got %q", out)
	}
	if want := readGolden(t, "testdata/fmt/typo.golden"); errs != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", errs, want)
	}
}

func TestFmtStdinIsNamedStdin(t *testing.T) {
	code, _, errs := runCLI(t, "SELECT a FROM t WHERE;", "fmt")
	if code != exitBadInput {
		t.Fatalf("exit %d, want %d", code, exitBadInput)
	}
	if !strings.HasPrefix(errs, "<stdin>:1:22: ") {
		t.Errorf("stderr = %q, want it to start with <stdin>:1:22:", errs)
	}
	code, out, _ := runCLI(t, "show   tiers", "fmt")
	if code != exitOK || out != "SHOW TIERS;\n" {
		t.Errorf("exit %d, stdout %q", code, out)
	}
}

func TestFmtCheckAndWrite(t *testing.T) {
	dir := t.TempDir()
	messy := filepath.Join(dir, "messy.sql")
	if err := os.WriteFile(messy, []byte(readGolden(t, "testdata/fmt/messy.sql")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "", "fmt", "--check", messy)
	if code != exitFailure || strings.TrimSpace(out) != messy {
		t.Fatalf("--check on a messy file: exit %d, stdout %q", code, out)
	}
	if code, _, errs := runCLI(t, "", "fmt", "-w", messy); code != exitOK {
		t.Fatalf("-w: exit %d: %s", code, errs)
	}
	if got, want := readGolden(t, messy), readGolden(t, "testdata/fmt/messy.golden"); got != want {
		t.Errorf("-w wrote:\n%s\nwant:\n%s", got, want)
	}
	if code, out, _ := runCLI(t, "", "fmt", "--check", messy); code != exitOK || out != "" {
		t.Errorf("--check after -w: exit %d, stdout %q", code, out)
	}
}

func TestFmtMissingFileIsBadInput(t *testing.T) {
	if code, _, _ := runCLI(t, "", "fmt", "testdata/fmt/does-not-exist.sql"); code != exitBadInput {
		t.Errorf("exit %d, want %d", code, exitBadInput)
	}
}
