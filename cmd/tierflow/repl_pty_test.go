package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/tierflow/tierflow/cmd/tierflow/repl"
	"github.com/tierflow/tierflow/cmd/tierflow/repl/repltest"
	"github.com/tierflow/tierflow/internal/testenv"
)

// childEnv makes the test binary act as tierflow, with the REPL over the
// generator double, so the pty test drives a real process on a real terminal
// (Ctrl-C must arrive as SIGINT from the terminal's line discipline).
const childEnv = "TIERFLOW_TEST_REPL_CHILD"

// argvLogEnv names a file a real child appends its command line to.
const argvLogEnv = "TIERFLOW_TEST_ARGV_LOG"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case natsChild:
		os.Exit(serveNATS())
	case "generator":
		os.Exit(runWithGenerator(os.Args[1:]))
	case "real":
		if f := os.Getenv(argvLogEnv); f != "" {
			// A test reads what other users of the machine would see (ps).
			if lf, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
				fmt.Fprintln(lf, strings.Join(os.Args, " "))
				lf.Close()
			}
		}
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files under testdata/")
	}
	// The parallel tests (the documents' commands, the recovery drills)
	// wait on rate-limited streams, restarts and expiries, each in
	// processes of its own: four at a time, not one per core. (Eight
	// beside two CPU hogs at load 27 starved the drills' coordinators:
	// every worker expired at once, NATS connects timed out.)
	testenv.WaitingParallel(4)
	os.Exit(m.Run())
}

// runWithGenerator is run() with the repl command's engine replaced by the
// test double; everything else is the real CLI.
func runWithGenerator(args []string) int {
	a := &app{in: os.Stdin, out: os.Stdout, err: os.Stderr}
	root := newRootCmd(a)
	for _, c := range root.Commands() {
		if c.Name() == "repl" {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(newReplCmdWith(a, func(*app) repl.Engine {
		return repltest.Generator{Batch: 2, Interval: 30 * time.Millisecond}
	}))
	root.SetArgs(args)
	err := root.Execute()
	var se silentExit
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &se):
		return se.Code
	default:
		os.Stderr.WriteString("tierflow: " + err.Error() + "\n")
		return exitFailure
	}
}

// ptyTerm is the test's side of a pseudo-terminal running the REPL.
type ptyTerm struct {
	t    *testing.T
	f    *os.File
	mu   sync.Mutex
	buf  bytes.Buffer
	more chan struct{} // signalled whenever output arrives
	seen int           // output before this offset has been matched
}

func startTerm(t *testing.T, engine, home string, args ...string) (*ptyTerm, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), childEnv+"="+engine, "HOME="+home, "XDG_STATE_HOME=", "TERM=xterm", "NO_COLOR=")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 160})
	if err != nil {
		t.Fatalf("starting the REPL on a pty: %v", err)
	}
	tm := &ptyTerm{t: t, f: f, more: make(chan struct{}, 1)}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := f.Read(b)
			tm.mu.Lock()
			tm.buf.Write(b[:n])
			tm.mu.Unlock()
			select {
			case tm.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = f.Close()
	})
	return tm, cmd
}

func (tm *ptyTerm) send(s string) {
	tm.t.Helper()
	if _, err := tm.f.Write([]byte(s)); err != nil {
		tm.t.Fatalf("writing %q to the pty: %v", s, err)
	}
}

// expect waits until the output after the last match contains re, and
// moves past it. It fails the test with the whole screen after 5 s.
func (tm *ptyTerm) expect(re string) string {
	tm.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	for {
		tm.mu.Lock()
		out := tm.buf.String()
		tm.mu.Unlock()
		if loc := rx.FindStringIndex(out[tm.seen:]); loc != nil {
			m := out[tm.seen+loc[0] : tm.seen+loc[1]]
			tm.seen += loc[1]
			return m
		}
		select {
		case <-tm.more:
		case <-deadline.C:
			rest := out[tm.seen:]
			if len(rest) > 3000 {
				rest = "…" + rest[len(rest)-3000:]
			}
			tm.t.Fatalf("no %q in the REPL's output after 5s; unmatched output:\n%q", re, rest)
		}
	}
}

func TestReplOnPseudoTerminal(t *testing.T) {
	home := t.TempDir()
	tm, cmd := startTerm(t, "generator", home, "repl")
	tm.expect(`Type \\\? for help`)
	tm.expect(regexp.QuoteMeta(repl.Prompt))

	// A statement over two lines: the continuation prompt, then the tag.
	tm.send("CREATE MODEL classify TASK 'image-classification'\r")
	tm.expect(regexp.QuoteMeta(repl.ContinuationPrompt))
	tm.send("  VARIANTS (small FROM 'm/small.onnx', large FROM 'm/large.onnx');\r")
	tm.expect(`CREATE MODEL classify\r\n`)
	tm.send("CREATE STREAM shelves (camera INT, label VARCHAR) FROM NATS 'store.frames' RATE 40 PER SECOND;\r")
	tm.expect(`CREATE STREAM shelves\r\n`)

	// TAB completes the model name the session just created.
	tm.send(`\d clas` + "\t")
	tm.expect(`sify`)
	tm.send("\r")
	tm.expect(`Model classify \(task image-classification\)`)
	tm.expect(`variant \| large`)

	tm.send(`\d` + "\r")
	tm.expect(`shelves\s+\| stream \| nats 'store.frames'`)
	tm.expect(`\(2 rows\)`)

	// A stream that never ends: rows render as they arrive under a status
	// line; Ctrl-C cancels it and the REPL keeps going.
	tm.send("SELECT camera, label FROM shelves;\r")
	tm.expect(`camera \| label`)
	tm.expect(`row-3`)
	tm.expect(`rows/s`)
	tm.send("\x03")
	tm.expect(`Cancelled after \d+ rows, [0-9.]+ s, \d+ rows/s\.`)
	tm.expect(regexp.QuoteMeta(repl.Prompt))
	tm.send("SELECT label FROM shelves LIMIT 3;\r")
	tm.expect(`row-2 \|\r\n`)
	tm.expect(`\(3 rows\)`)

	// Ctrl-C at the prompt clears the line, and the session goes on. (Wait
	// for the prompt: before it, the terminal is not in raw mode yet and
	// Ctrl-C would be a signal, not an edit.)
	tm.expect(regexp.QuoteMeta(repl.Prompt))
	tm.send("SELECT nonsense")
	tm.send("\x03")
	tm.send("\\timing on\r")
	tm.expect(`Timing is on\.`)

	tm.send("\\q\r")
	waitExit(t, cmd)
	hist, err := os.ReadFile(filepath.Join(home, ".tierflow_history"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"CREATE MODEL classify TASK 'image-classification' VARIANTS (small FROM 'm/small.onnx', large FROM 'm/large.onnx');",
		`\d classify`,
		"SELECT label FROM shelves LIMIT 3;",
	} {
		if !strings.Contains(string(hist), want+"\n") {
			t.Errorf("history lacks %q:\n%s", want, hist)
		}
	}
}

// waitExit waits for the REPL to exit with status 0.
func waitExit(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("repl exited with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("repl did not exit")
	}
}

// TestReplOnPseudoTerminalWithTheExecutor is the same terminal with the real
// local executor: a multi-line join over CSV files, then formats and Ctrl-D.
func TestReplOnPseudoTerminalWithTheExecutor(t *testing.T) {
	setup := streamScript(t)
	tm, cmd := startTerm(t, "real", t.TempDir(), "repl")
	tm.expect(regexp.QuoteMeta(repl.Prompt))
	tm.send(`\i ` + setup + "\r")
	tm.expect(`CREATE TABLE sensors\r\n`)
	tm.send("SELECT s.site, r.temperature\r")
	tm.expect(regexp.QuoteMeta(repl.ContinuationPrompt))
	tm.send("FROM readings AS r JOIN sensors AS s ON r.sensor = s.sensor\r")
	tm.send("WHERE r.temperature > 25;\r")
	tm.expect(`site\s+\| temperature`)
	tm.expect(`south \|\s+26 \|\r\n`)
	tm.expect(`\(2 rows\)`)
	tm.send(`\format csv` + "\r")
	tm.send("SELECT sensor FROM readings WHERE temperature < 21;\r")
	tm.expect(`sensor\r\n1\r\n`)
	tm.expect(regexp.QuoteMeta(repl.Prompt))
	tm.send("\x04") // Ctrl-D at an empty prompt quits
	waitExit(t, cmd)
}

// TestReplCtrlDWhileAQueryRuns: Ctrl-D typed while a query streams reaches a
// terminal in cooked mode. Depending on when readline next reads, it is end
// of input (the REPL quits after the query) or dropped (the REPL goes on);
// either way Ctrl-C stops the query and the REPL never hangs on the way out.
func TestReplCtrlDWhileAQueryRuns(t *testing.T) {
	tm, cmd := startTerm(t, "generator", t.TempDir(), "repl")
	tm.expect(regexp.QuoteMeta(repl.Prompt))
	tm.send("CREATE STREAM s (n BIGINT) FROM NATS 'x';\r")
	tm.expect(`CREATE STREAM s\r\n`)
	tm.send("SELECT n FROM s;\r")
	tm.expect(`rows/s`)
	tm.send("\x04")
	tm.expect(`rows/s`) // still streaming
	tm.send("\x03")
	tm.expect(`Cancelled after`)
	_, _ = tm.f.Write([]byte("\\q\r")) // fails harmlessly if it already quit
	waitExit(t, cmd)
}
