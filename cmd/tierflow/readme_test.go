package main

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/internal/testenv"
	"github.com/tierflow/tierflow/operators/session"
)

// readmeSkips are the documents' commands this test does not run, and why.
// Each must still be shown in README.md or docs/*.md (a stale entry fails
// the test).
var readmeSkips = map[string]string{
	"make test":       "runs the whole test suite, this test included",
	"make test-long":  "runs the whole test suite with the long tests, this test included",
	"make vet":        "vets both modules with every analyzer, a minute on 2 cores (CI runs it after make test)",
	"make fuzz":       "fuzzes the parser for five minutes",
	"make fuzz-brief": "fuzzes every target for a count of executions, minutes on 2 cores (make test runs each target's seed corpus)",
	"make ocr":        "runs PaddleOCR's networks over the 24 scenes twice, minutes on 2 cores (examples/ocr's tests run the same queries and check their rows against bare ONNX Runtime)",
	"make gpu-check":  "needs an NVIDIA GPU with CUDA 13 and fetches 275 MB (TestCUDAMatchesCPU skips here and says why)",
	"bin/tierflow coordinator --infra examples/vqa/infra.yaml":                                                                        "a long-running server (TestCoordinatorWorkerSubmit drives one)",
	"bin/tierflow worker --nats nats://127.0.0.1:PORT --tier edge --location l1 --type x4 --name e1":                                  "a long-running server, PORT stands for the coordinator's",
	"bin/tierflow worker --nats nats://127.0.0.1:PORT --tier cloud --name c1":                                                         "a long-running server, PORT stands for the coordinator's",
	"bin/tierflow submit --nats nats://127.0.0.1:PORT examples/streaming/query.sql":                                                   "PORT stands for a running coordinator's",
	"bin/tierflow publish --nats nats://127.0.0.1:PORT --rate 2000 examples/streaming/readings.csv demo.readings":                     "PORT stands for a running coordinator's",
	"tierflow repl -f setup.sql -c \"SELECT sensor, count(*) AS n FROM readings GROUP BY sensor, TUMBLE(ts, INTERVAL '10' SECOND);\"": "setup.sql stands for the reader's own script",
	"bin/tierflow coordinator --nats-config secrets/server.conf --nats-creds secrets/coordinator.creds --tls-ca secrets/ca.pem --authority secrets/authority.json --data-root /srv/tierflow --max-query-time 1h --max-queries-per-user 4": "a long-running server (TestSecureWalkthroughAttacks runs the secure walkthrough as written)",
	"bin/tierflow worker --nats tls://nats.example.com:4222 --nats-creds secrets/w1.creds --tls-ca secrets/ca.pem --tier edge --location l1 --type x4 --data-root /srv/tierflow":                                                          "a long-running server on the reader's own host (TestSecureWalkthroughAttacks runs the walkthrough as written)",
	"bin/tierflow submit --nats tls://nats.example.com:4222 --nats-creds secrets/alice.creds --tls-ca secrets/ca.pem query.sql":                                                                                                           "needs the walkthrough's coordinator on the reader's own host (TestSecureWalkthroughAttacks runs it)",
	"tierflow completion bash > /etc/bash_completion.d/tierflow": "installs into /etc (TestExitCodes runs completion bash)",
	"make bench-sqlpeer":                                                 "builds DuckDB's peer, minutes (bench/sqlpeer's own tests run it)",
	"bin/tierflow bench sql --peer duckdb":                               "needs the DuckDB peer and 1M rows of data (TestBenchSQL* drive the command with a stand-in peer; bench/sqlpeer's tests compare every answer with DuckDB's)",
	"bin/tierflow bench sql --rows 1M,10M --format json":                 "needs the DuckDB peer and 10M rows of data (as above)",
	"bin/tierflow bench sql --queries topn,join --reps 5":                "needs the DuckDB peer and 1M rows of data (as above)",
	"bin/tierflow bench tpch --sf 1 --peer duckdb":                       "needs the DuckDB peer and scale factor 1 (TestBenchTPCH* drive the command, with a stand-in peer and with --peer none; bench/sqlpeer's TestTPCHMatchesDuckDB compares all 22 answers with DuckDB's)",
	"bin/tierflow bench tpch --sf 0.01,0.1 --queries q1,q6,q13 --reps 1": "needs the DuckDB peer (as above)",
	"bin/tierflow bench tpch --sf 0.1 --peer none":                       "22 queries at scale factor 0.1 (TestBenchTPCHWithoutAPeer runs the command at a small scale)",
	// docs/deploy.md: the three-tier deployment on the reader's own hosts.
	"tierflow coordinator --nats tls://cloud-1:4222,tls://cloud-2:4222 --nats-creds $S/coordinator.creds --tls-ca $S/ca.pem --infra infra.yaml --catalog /srv/tierflow/catalog.yaml --data-root /srv/tierflow --authority $S/authority.json --metrics :9100": deployDocSkip,
	"tierflow worker --nats tls://cloud-1:4222 --nats-creds $S/cloud-gpu-1.creds --tls-ca $S/ca.pem --tier cloud --type gpu-1 --data-root /srv/tierflow --metrics :9101":                                                                                     deployDocSkip,
	"tierflow worker --nats tls://hub-l1:4222 --nats-creds $S/hub-l1.creds --tls-ca $S/ca.pem --tier hub --location l1 --type x8 --data-root /srv/tierflow":                                                                                                  deployDocSkip,
	"tierflow worker --nats nats://127.0.0.1:4222 --tier edge --location l1 --type x4 --name edge-l1-a --data-root /srv/tierflow":                                                                                                                            deployDocSkip,
	"tierflow submit --nats tls://cloud-2:4222 --nats-creds alice.creds --tls-ca ca.pem query.sql":                                                                                                                                                           deployDocSkip,
}

// readmeShort are the documents' benchmark commands this test runs in a
// short form under make test (the same command and output shape, a
// smaller measurement) and as written under make test-long; the
// benchmarks' own packages test each in a small form as well.
var readmeShort = map[string]string{
	// Every strategy on every setup's sweep of targets (17 s on 2 busy
	// cores): --quick plans each setup's own targets.
	"bin/tierflow bench planner": "bin/tierflow bench planner --quick",
	// 1,000 rows per mix and 60 scheduling windows (37 s on 2 busy cores).
	"bin/tierflow bench sneakpeek": "bin/tierflow bench sneakpeek --rows 200 --windows 5",
}

// deployDocSkip is why docs/deploy.md's commands are not run here.
const deployDocSkip = "a long-running process on the reader's own hosts and NATS servers (TestDeployDocConfigs parses the servers' configs; TestClusterNodeFailure runs the deployment's shape)"

// readmeExit are the documents' commands that show a failure, with its code.
var readmeExit = map[string]int{
	"echo 'SELECT a FORM t;' | tierflow fmt": exitBadInput, // shows the syntax error
	// Objectives no plan meets: the plan, why, what is reachable, exit 1.
	"bin/tierflow explain --throughput 400 examples/vqa/query.sql": exitFailure,
}

// docFiles are the documents whose commands TestReadmeCommands runs:
// README.md and every docs/*.md, relative to this package.
func docFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(docs)
	return append([]string{"../../README.md"}, docs...)
}

// docText is the text of every document of docFiles, one after another.
func docText(t *testing.T) string {
	t.Helper()
	var all strings.Builder
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
		all.WriteString("\n")
	}
	return all.String()
}

// docCommandsRun are the commands TestReadmeCommands runs (those the
// documents show and readmeSkips does not name), each also keyed with a
// leading bin/ dropped, as the examples' comments write them.
func docCommandsRun(t *testing.T) map[string]bool {
	t.Helper()
	run := map[string]bool{}
	for _, f := range docFiles(t) {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range readmeCommands(t, string(text)) {
			if _, skip := readmeSkips[c]; !skip {
				run[c], run[strings.TrimPrefix(c, "bin/")] = true, true
			}
		}
	}
	return run
}

// readmeCommands are the shell commands shown in a document's code blocks
// that call tierflow or make (after a "$ " prompt or alone on their line),
// without their trailing comments, in order and without repeats.
func readmeCommands(t *testing.T, readme string) []string {
	t.Helper()
	subs := map[string]bool{}
	for _, c := range newRootCmd(&app{}).Commands() {
		subs[c.Name()] = true
	}
	tf := regexp.MustCompile(`(?:^|\| )(?:bin/)?tierflow (\S+)`)
	comment := regexp.MustCompile(`\s+#\s.*$`)
	var cmds []string
	seen := map[string]bool{}
	in := false
	var cont string // a command continued with a trailing backslash
	for _, line := range strings.Split(readme, "\n") {
		if strings.HasPrefix(line, "```") {
			in, cont = !in, ""
			continue
		}
		if !in {
			continue
		}
		if cont != "" {
			line, cont = cont+" "+strings.TrimSpace(line), ""
		}
		if strings.HasSuffix(line, "\\") {
			cont = strings.TrimSpace(strings.TrimSuffix(line, "\\"))
			continue
		}
		line = strings.TrimPrefix(strings.TrimSpace(line), "$ ")
		m := tf.FindStringSubmatch(line)
		if !(strings.HasPrefix(line, "make ") || m != nil && subs[m[1]]) {
			continue
		}
		line = comment.ReplaceAllString(line, "")
		if !seen[line] {
			seen[line] = true
			cmds = append(cmds, line)
		}
	}
	return cmds
}

// TestReadmeCommands runs every command README.md and docs/*.md show (those
// calling bin/tierflow, tierflow or make) as written and wants each to exit 0
// (or the code the document shows it failing with). `make demo` runs
// in the repository (its setup step builds bin/tierflow); the others run in a
// directory that links to the repository's files, so what they write lands
// there, with a bin/tierflow that is this CLI.
func TestReadmeCommands(t *testing.T) {
	// Beside the drills (recovery_test.go): every command runs in a
	// process of its own, in a directory of its own, and most of them wait
	// on rate-limited streams; run after the serial tests, it was a third of
	// this package's wall time.
	t.Parallel()
	var cmds []string
	listed := map[string]bool{}
	for _, f := range docFiles(t) {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range readmeCommands(t, string(text)) {
			if !listed[c] {
				listed[c] = true
				cmds = append(cmds, c)
			}
		}
	}
	if len(cmds) < 15 {
		t.Fatalf("found only %d commands in README.md and docs/*.md: %q", len(cmds), cmds)
	}
	for c := range readmeSkips {
		if !listed[c] {
			t.Errorf("readmeSkips names %q, which neither README.md nor docs/*.md shows any more", c)
		}
	}
	for c := range readmeShort {
		if !listed[c] {
			t.Errorf("readmeShort names %q, which neither README.md nor docs/*.md shows any more", c)
		}
	}
	work := readmeWorkdir(t)
	// make install links tierflow into PREFIX/bin: a directory of the test's.
	prefix := t.TempDir()
	env := append(os.Environ(), "PATH="+filepath.Join(work, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"), "PREFIX="+prefix)
	transcripts := docTranscripts(t)
	runOne := func(t *testing.T, dir, c string) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		line := c
		if short, ok := readmeShort[c]; ok && !testenv.IsLong() {
			line = short
		}
		cmd := osexec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", line)
		cmd.Dir, cmd.Env = dir, env
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		_ = cmd.Run()
		out := []byte(stdout.String() + stderr.String())
		want := readmeExit[c]
		if code := cmd.ProcessState.ExitCode(); code != want || regexp.MustCompile(`panic:|goroutine \d+ \[`).Match(out) {
			t.Errorf("%s: exit %d, want %d\n%s", c, code, want, tail(out, 3000))
		}
		if tr, ok := transcripts[c]; ok {
			if msg := checkTranscript(tr, stdout.String(), stderr.String()); msg != "" {
				t.Errorf("%s: the document's transcript differs from the output: %s", c, msg)
			}
		}
		if c == "make install" {
			if b, err := osexec.Command(filepath.Join(prefix, "bin", "tierflow"), "version").CombinedOutput(); err != nil {
				t.Errorf("make install: %s/bin/tierflow version: %v\n%s", prefix, err, b)
			}
		}
	}
	// In the repository itself: their setup step builds bin/tierflow there,
	// where the build cache knows the sources' paths. One after the other
	// (both run setup, which writes bin/tierflow), beside the other
	// commands: those run in their own directory with their own
	// bin/tierflow, and the two make runs were most of this test's wall
	// time when they ran before them.
	inRepo := map[string]bool{"make demo": true, "make install": true}
	t.Run("rest", func(t *testing.T) {
		t.Run("in the repository", func(t *testing.T) {
			t.Parallel()
			for _, c := range []string{"make demo", "make install"} {
				if listed[c] {
					t.Run(c, func(t *testing.T) { runOne(t, "../..", c) })
				}
			}
		})
		for _, c := range cmds {
			if inRepo[c] {
				continue
			}
			t.Run(c, func(t *testing.T) {
				if why, ok := readmeSkips[c]; ok {
					t.Skip(why)
				}
				if strings.Contains(c, "| dot ") {
					if _, err := osexec.LookPath("dot"); err != nil {
						t.Skip("needs Graphviz's dot, which this machine lacks")
					}
				}
				t.Parallel()
				runOne(t, work, c)
			})
		}
	})
}

// readmeWorkdir is a directory that looks like the repository root (links
// to its files and directories) with its own bin/tierflow running this
// test binary as the CLI, so what the commands write lands there.
func readmeWorkdir(t *testing.T) string {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "bin" || e.Name() == ".git" {
			continue
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(work, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(work, "bin"), 0o755)
	script := fmt.Sprintf("#!/bin/sh\n%s=real exec %s \"$@\"\n", childEnv, strconv.Quote(self))
	if err := os.WriteFile(filepath.Join(work, "bin", "tierflow"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return work
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// TestReadmeFunctionCount: the number of built-in functions the documents
// state (docs/language.md) is the number SHOW FUNCTIONS lists.
func TestReadmeFunctionCount(t *testing.T) {
	m := regexp.MustCompile(`lists the (\d+) built-in\s+functions`).FindStringSubmatch(docText(t))
	if m == nil {
		t.Fatal("neither README.md nor docs/*.md states how many built-in functions SHOW FUNCTIONS lists any more")
	}
	stated, _ := strconv.Atoi(m[1])
	if n := len(session.Functions(nil, "").Rows); stated != n {
		t.Errorf("the docs say SHOW FUNCTIONS lists %d built-in functions; it lists %d", stated, n)
	}
}
