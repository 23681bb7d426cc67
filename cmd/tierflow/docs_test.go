package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The README is the front page: what tierflow is, the two commands, the
// package map, the command table and links. Everything longer lives in
// docs/ (language.md, operations.md, benchmarks.md, architecture.md).
const readmeMaxLines = 300

// TestReadmeShape: README.md stays a front page (at most readmeMaxLines
// lines) and shows the two commands a newcomer needs near its top.
func TestReadmeShape(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail under docs/ and link it", len(lines), readmeMaxLines)
	}
	top := strings.Join(lines[:min(len(lines), 40)], "\n")
	for _, c := range []string{"make demo", "make test"} {
		if !slices.Contains(readmeCommands(t, top), c) {
			t.Errorf("README.md's first 40 lines no longer show %q in a code block", c)
		}
	}
}

// TestReadmePackageMap: the package map (README.md, "Where things are")
// names every Go package of the repository, each in the first column of a
// row, and names none that is gone. Packages under examples/ are covered
// by its row.
func TestReadmePackageMap(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	in := false
	cell := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = line == "## Where things are"
			continue
		}
		if !in || !strings.HasPrefix(line, "| ") {
			continue
		}
		first := strings.SplitN(strings.TrimPrefix(line, "| "), " | ", 2)[0]
		for _, m := range cell.FindAllStringSubmatch(first, -1) {
			named[m[1]] = true
		}
	}
	if len(named) == 0 {
		t.Fatal(`README.md has no package map (a table under "## Where things are")`)
	}
	pkgs := goPackages(t, "../..")
	exists := map[string]bool{}
	for _, p := range pkgs {
		exists[p] = true
		if strings.HasPrefix(p, "examples/") && named["examples/"] {
			continue
		}
		if !named[p] {
			t.Errorf("README.md's package map does not name %s: add it to a row", p)
		}
	}
	for p := range named {
		if p != "examples/" && !exists[p] {
			t.Errorf("README.md's package map names %s, which has no Go package any more", p)
		}
	}
}

// goPackages are the directories under root, relative to it, that hold a
// Go file other than a test, in order.
func goPackages(t *testing.T, root string) []string {
	t.Helper()
	set := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "bin" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			set[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// pendingDocs are documents the docs link to that another change is
// writing; a link to one is not checked until it is there.
var pendingDocs = map[string]string{
	"docs/architecture.md": "the runtime's architecture, written with the query supervisor (issue #26)",
}

// TestDocLinks: every relative link in README.md and docs/*.md leads to a
// file or directory of the repository, and a #fragment to a heading of the
// document it names.
func TestDocLinks(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		a := markdownAnchors(string(b))
		anchors[path] = a
		return a
	}
	for _, f := range docFiles(t) {
		abs, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, abs)
		b, err := os.ReadFile(abs)
		if err != nil {
			t.Fatal(err)
		}
		inCode := false
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "```") {
				inCode = !inCode
			}
			if inCode {
				continue
			}
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				dest := abs
				if file != "" {
					dest = filepath.Join(filepath.Dir(abs), file)
				}
				destRel, _ := filepath.Rel(root, dest)
				if _, err := os.Stat(dest); err != nil {
					if _, pending := pendingDocs[filepath.ToSlash(destRel)]; pending {
						continue
					}
					t.Errorf("%s:%d: link %s: %s is not there", rel, i+1, target, filepath.ToSlash(destRel))
					continue
				}
				if frag != "" && strings.HasSuffix(dest, ".md") && !anchorsOf(dest)[frag] {
					t.Errorf("%s:%d: link %s: %s has no heading #%s", rel, i+1, target, filepath.ToSlash(destRel), frag)
				}
			}
		}
	}
}

// markdownAnchors are the fragments GitHub gives a document's headings:
// lower case, punctuation but '-' and '_' dropped, spaces as '-', a repeat
// suffixed -1, -2, ...
func markdownAnchors(doc string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inCode := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var slug strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				slug.WriteRune('-')
			case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127 && r != '·':
				slug.WriteRune(r)
			}
		}
		s := slug.String()
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// TestBenchmarkTablesStamped: every table in docs/benchmarks.md (a
// markdown table, or a fenced block of a bench's table output) says just
// above it when it was measured, the commit that recorded it and the
// machine, as "*measured YYYY-MM-DD · commit HASH · machine: NAME*", NAME
// one of the machines the document describes at its top.
func TestBenchmarkTablesStamped(t *testing.T) {
	b, err := os.ReadFile("../../docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	machines := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^- \*\*([a-z0-9-]+)\*\*:`).FindAllStringSubmatch(string(b), -1) {
		machines[m[1]] = true
	}
	if len(machines) == 0 {
		t.Fatal("docs/benchmarks.md describes no machine (a line `- **name**: ...`)")
	}
	stamp := regexp.MustCompile(`^\*measured \d{4}-\d{2}-\d{2} · commit [0-9a-f]{7,40} · machine: ([a-z0-9-]+)[^*]*\*$`)
	stamped := func(i int) (string, bool) {
		// The nearest non-blank line above line i.
		for j := i - 1; j >= 0; j-- {
			if strings.TrimSpace(lines[j]) == "" {
				continue
			}
			m := stamp.FindStringSubmatch(lines[j])
			if m == nil {
				return "", false
			}
			return m[1], true
		}
		return "", false
	}
	boxTable := regexp.MustCompile(`^[┌│]|^\S+\s{2,}\S+\s{2,}\S+`)
	inCode, tables := false, 0
	for i, line := range lines {
		if strings.HasPrefix(line, "```") {
			if !inCode {
				inCode = true
				// A fenced block without a language that holds a table
				// (box drawing, or columns aligned by runs of spaces) on
				// its first line or after the command that printed it.
				first := ""
				if i+1 < len(lines) {
					first = lines[i+1]
				}
				if strings.HasPrefix(first, "$ ") && i+2 < len(lines) {
					first = lines[i+2]
				}
				if strings.TrimSpace(line) == "```" && boxTable.MatchString(first) {
					checkStamp(t, lines, i, stamped, machines)
					tables++
				}
			} else {
				inCode = false
			}
			continue
		}
		if !inCode && strings.HasPrefix(line, "| ---") && i > 0 {
			// lines[i-1] is the header row; the stamp is above it.
			checkStamp(t, lines, i-1, stamped, machines)
			tables++
		}
	}
	if tables < 10 {
		t.Errorf("found only %d tables in docs/benchmarks.md", tables)
	}
}

func checkStamp(t *testing.T, lines []string, i int, stamped func(int) (string, bool), machines map[string]bool) {
	t.Helper()
	m, ok := stamped(i)
	switch {
	case !ok:
		t.Errorf("docs/benchmarks.md:%d: the table %q has no stamp above it (*measured YYYY-MM-DD · commit HASH · machine: NAME*)", i+1, strings.TrimSpace(lines[i]))
	case !machines[m]:
		t.Errorf("docs/benchmarks.md:%d: the table's machine %q is not one the document describes", i+1, m)
	}
}
