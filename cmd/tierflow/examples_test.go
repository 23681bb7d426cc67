package main

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/examples/ocr"
	"github.com/tierflow/tierflow/internal/testenv"
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

// exampleNotRun are the examples no test runs, and why: each plans
// (TestExamples explains it), but running needs what this repository
// does not have yet.
var exampleNotRun = map[string]string{
	"examples/aicity/query.sql":  aicityNotRun,
	"examples/setups/aicity.sql": aicityNotRun,
}

const aicityNotRun = "the catalog's YOLOv5, ReID, tracking and clustering variants are the JellyBean paper's profiles; their model files (models/yolov5s.onnx, ...) are in no package the npm registry or Debian has (a vehicle detector or re-identification network in ONNX), and no camera frames are published on aicity.frames. The call's form runs: a detector giving one row per box as box, crop and score, with a network per crop (examples/ocr TestDetectionSetMatchesBareOnnxRuntime)"

// TestExamples: every query under examples/ is in canonical form (tierflow
// fmt --check), plans with `tierflow explain FILE` alone, and runs as its
// comments say, with exit 0; a long run is cut short by its own bound
// (exampleRuns). An example whose comments document no run runs with
// `run FILE`, over a published stream (TestNATSExamplesRun), or is listed
// in exampleNotRun with why not. A command the documents also show is left to
// TestReadmeCommands, which runs it as written (once is enough: both
// want exit 0). The OCR examples read the first two scenes
// (smallOCRExamples); make test-long runs them on all 24.
func TestExamples(t *testing.T) {
	// Beside the drills and the documents' commands: the examples mostly
	// wait on their streams' rates and EXPLAIN ANALYZE's durations (51 s
	// of wall time, 9.5 of CPU, loaded), and each runs in its own
	// in-process CLI over its own files.
	t.Parallel()
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
	docsRun := docCommandsRun(t)
	ocrDir := ""
	if !testenv.IsLong() {
		ocrDir = smallOCRExamples(t, root, 2)
	}
	// Paths in the documented commands are from the repository root, the
	// test runs in cmd/tierflow; files the commands write go to outDir.
	var fix func(args []string) []string
	fix = func(args []string) []string {
		out := make([]string, len(args))
		for i, a := range args {
			switch {
			case i > 0 && args[i-1] == "--link-trace" && strings.Contains(a, "=examples/"):
				// TIER_A:TIER_B=FILE: the file as any example path.
				tiers, file, _ := strings.Cut(a, "=")
				out[i] = tiers + "=" + fix([]string{file})[0]
			case ocrDir != "" && strings.HasPrefix(a, "examples/ocr/"):
				out[i] = filepath.Join(ocrDir, strings.TrimPrefix(a, "examples/ocr/"))
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
				if docsRun["tierflow "+strings.Join(args, " ")] {
					t.Logf("tierflow %s: shown in the documents, TestReadmeCommands runs it", strings.Join(args, " "))
					continue
				}
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
			// Every example runs too: as documented, as the documents
			// show, over a published stream (natsExamples), or else
			// with `run FILE`, unless exampleNotRun says why it cannot.
			ran := false
			for _, m := range exampleCommand.FindAllStringSubmatch(string(src), -1) {
				ran = ran || strings.HasPrefix(m[1], "run ")
			}
			for _, ex := range natsExamples {
				ran = ran || ex.file == file
			}
			if why, ok := exampleNotRun[file]; ok {
				if ran {
					t.Errorf("exampleNotRun lists %s, which runs now", file)
				}
				t.Logf("not run: %s", why)
			} else if !ran {
				runs = append(runs, []string{"run", file})
			}
			plain := docsRun["tierflow explain "+file]
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

// smallOCRExamples copies examples/ocr's scripts, link traces, catalog and infrastructure
// into a directory of the test's with a stream of the first n scenes in
// place of the 24 (their networks take 0.2-1 s a scene on 2 cores), the
// catalog's model files made absolute, and returns the directory.
func smallOCRExamples(t *testing.T, root string, n int) string {
	t.Helper()
	src := filepath.Join(root, "examples", "ocr")
	dir := t.TempDir()
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(src, "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	traces, err := filepath.Glob(filepath.Join(src, "*.csv")) // --link-trace's
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, traces...)
	for _, f := range append(files, filepath.Join(src, "catalog.yaml"), filepath.Join(src, "infra.yaml")) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if filepath.Base(f) == "catalog.yaml" {
			text = strings.ReplaceAll(text, "../../.cache/", abs+"/.cache/")
			if !strings.Contains(text, "subject: data/scenes.arrow") {
				t.Fatal("examples/ocr/catalog.yaml no longer reads data/scenes.arrow")
			}
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	scenes, err := ocr.Generate(ocr.Seed, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ocr.WriteStream(filepath.Join(dir, "data", "scenes.arrow"), filepath.Join(dir, "data", "labels.json"), scenes, n); err != nil {
		t.Fatal(err)
	}
	return dir
}
