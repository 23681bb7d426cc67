package main

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// exampleCommand finds the commands an example documents in its comments:
// lines `--   tierflow ARGS`, continued with a trailing backslash.
var exampleCommand = regexp.MustCompile(`(?m)^--\s+tierflow ((?:.*\\\n--\s+)*.*)$`)

// exampleRuns says how to run an example whose comments document no
// command, or runs it shorter than documented (keyed by the documented
// command, or by the file).
var exampleRuns = map[string][]string{
	// Documented as `tierflow run ... analyze.sql`: its EXPLAIN ANALYZE runs
	// for DURATION 20; the command line's bound wins over the statement's.
	"run --catalog examples/fashion/catalog.yaml --infra examples/fashion/infra.yaml examples/fashion/analyze.sql": {"explain", "--analyze", "--duration", "1s", "examples/fashion/analyze.sql"},
	"explain --analyze --duration 20s examples/fashion/cascade.sql":                                                {"explain", "--analyze", "--duration", "1s", "examples/fashion/cascade.sql"},
	// Imports from the JellyBean prototype's inputs, outside the repository
	// (TestImportJellybean covers the importer): explain what it made.
	"import jellybean ../shared/reference/jellybean-vqa-medium --out examples/vqa": {"explain", "examples/vqa/query.sql"},
}

// TestExamples: every query under examples/ is in canonical form (tierflow
// fmt --check), plans with `tierflow explain FILE` alone, and runs as its
// comments say, with exit 0; a long run is cut short by its own bound
// (exampleRuns).
func TestExamples(t *testing.T) {
	root := "../.."
	var files []string
	err := filepath.WalkDir(filepath.Join(root, "examples"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".sql") {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil || len(files) < 17 {
		t.Fatalf("examples: %v, %d files", err, len(files))
	}
	sort.Strings(files)
	outDir := t.TempDir()
	// Paths in the documented commands are from the repository root, the
	// test runs in cmd/tierflow; files the commands write go to outDir.
	fix := func(args []string) []string {
		out := make([]string, len(args))
		for i, a := range args {
			switch {
			case strings.HasPrefix(a, "examples/"):
				out[i] = filepath.Join(root, a)
			case i > 0 && args[i-1] == "--output":
				out[i] = filepath.Join(outDir, a)
			default:
				out[i] = a
			}
		}
		return out
	}
	start := time.Now()
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			if code, out, errs := runCLI(t, "", "fmt", "--check", filepath.Join(root, file)); code != exitOK {
				t.Errorf("not in canonical form (tierflow fmt -w %s): exit %d %s%s", file, code, out, errs)
			}
			src, err := os.ReadFile(filepath.Join(root, file))
			if err != nil {
				t.Fatal(err)
			}
			var runs [][]string
			for _, m := range exampleCommand.FindAllStringSubmatch(string(src), -1) {
				cmd := regexp.MustCompile(`\\\n--\s+`).ReplaceAllString(m[1], "")
				if i := strings.Index(cmd, "   "); i > 0 {
					cmd = cmd[:i] // a comment after the command
				}
				args := strings.Fields(cmd)
				if alt, ok := exampleRuns[strings.Join(args, " ")]; ok {
					args = alt
				}
				runs = append(runs, args)
			}
			// Every example plans as it is, with no flags: the catalog and
			// infrastructure the defaults rule finds for it (defaults.go),
			// as run would use them. 13 of 22 did not: models declared in
			// SQL had no profile, a catalog beside the script clashed with
			// its CREATEs, table-only queries had nothing to place.
			plain := false
			for _, args := range runs {
				plain = plain || strings.Join(args, " ") == "explain "+file
			}
			if !plain {
				runs = append(runs, []string{"explain", file})
			}
			for _, args := range runs {
				code, _, errs := runCLI(t, "", fix(args)...)
				if code != exitOK {
					t.Errorf("tierflow %s: exit %d\n%s", strings.Join(args, " "), code, errs)
				}
			}
		})
	}
	t.Logf("%d examples in %s", len(files), time.Since(start).Round(time.Millisecond))
}
