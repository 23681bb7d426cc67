package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/creack/pty"

	"github.com/tierflow/tierflow/cmd/tierflow/repl"
)

// A transcript is a command a document shows after a "$ " prompt with its
// output under it, in the same code block, up to the next prompt or the
// block's end. TestReadmeCommands runs each command and holds its output to
// the transcript, so that what the documents show cannot drift from what
// the commands print:
//
//   - the output's lines come in the transcript's order; a line "..."
//     stands for any number of lines, and the lines between two such
//     elisions are consecutive lines of the output;
//   - lines that begin "-- " are what the command logs on stderr: they are
//     matched against stderr (in order, others may come between), the rest
//     against stdout, since the two streams interleave by timing;
//   - what changes from run to run is masked on both sides: numbers in log
//     lines, ports, query names and timing lines; a measurement's output
//     (bench, EXPLAIN ANALYZE) has every number masked and runs of spaces
//     and box-drawing rules collapsed, so its shape and labels are held.
type transcript struct {
	cmd   string
	lines []string
}

// docTranscripts are the transcripts of every document, by command.
func docTranscripts(t *testing.T) map[string]transcript {
	t.Helper()
	out := map[string]transcript{}
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range parseTranscripts(string(b)) {
			out[tr.cmd] = tr
		}
	}
	return out
}

var transcriptComment = regexp.MustCompile(`\s+#\s.*$`)

func parseTranscripts(doc string) []transcript {
	var out []transcript
	in := false
	var cur *transcript
	flush := func() {
		if cur != nil && len(cur.lines) > 0 {
			out = append(out, *cur)
		}
		cur = nil
	}
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			flush()
			in = !in
			continue
		}
		if !in {
			continue
		}
		if cmd, ok := strings.CutPrefix(line, "$ "); ok {
			flush()
			cur = &transcript{cmd: transcriptComment.ReplaceAllString(strings.TrimSpace(cmd), "")}
			continue
		}
		if cur != nil {
			cur.lines = append(cur.lines, line)
		}
	}
	flush()
	// Trailing blank lines are the block's layout, not output.
	for i := range out {
		for len(out[i].lines) > 0 && strings.TrimSpace(out[i].lines[len(out[i].lines)-1]) == "" {
			out[i].lines = out[i].lines[:len(out[i].lines)-1]
		}
	}
	return out
}

// measured says whether a command's output is a measurement.
func measured(cmd string) bool {
	return strings.Contains(cmd, " bench ") || strings.Contains(cmd, "--analyze") || strings.Contains(cmd, "analyze.sql")
}

var (
	volatile = []struct {
		re   *regexp.Regexp
		with string
	}{
		{regexp.MustCompile(`nats://127\.0\.0\.1:\d+`), "nats://127.0.0.1:PORT"},
		{regexp.MustCompile(`\bq-[0-9a-f]{8}\b`), "q-ID"},
		{regexp.MustCompile(`^(Optimizer time|Time): .*$`), "$1: (masked)"},
		// A Go duration's unit follows its size (850ms, 2.634s, 1m2s).
		{regexp.MustCompile(`\b(\d+h)?(\d+m)?\d+(\.\d+)?(ns|µs|ms|s)\b`), "DURATION"},
		// Files named from where the checkout is (an absolute catalog).
		{regexp.MustCompile(`/\S+/(examples|\.cache)/`), "$1/"},
	}
	number   = regexp.MustCompile(`[-+]?\d+(\.\d+)?([eE][-+]?\d+)?`)
	spacing  = regexp.MustCompile(`[ \t]+`)
	ruleRuns = regexp.MustCompile(`[─━]+`)
)

// normalize masks what varies between runs of a line.
func normalize(line string, measurement bool) string {
	line = strings.TrimRight(line, " ")
	for _, v := range volatile {
		line = v.re.ReplaceAllString(line, v.with)
	}
	if measurement || strings.HasPrefix(line, "-- ") {
		line = number.ReplaceAllString(line, "N")
	}
	if measurement {
		line = ruleRuns.ReplaceAllString(spacing.ReplaceAllString(line, " "), "─")
		line = strings.NewReplacer("│ yes │", "│ ? │", "│ no │", "│ ? │").Replace(line)
	}
	return line
}

// checkTranscript holds a command's stdout and stderr to its transcript;
// it returns what does not match ("" when all does).
func checkTranscript(tr transcript, stdout, stderr string) string {
	m := measured(tr.cmd)
	var logs []string
	var segs [][]string
	seg := []string{}
	for _, l := range tr.lines {
		switch {
		case strings.TrimSpace(l) == "...":
			segs = append(segs, seg)
			seg = []string{}
		case strings.HasPrefix(l, "-- "):
			logs = append(logs, normalize(l, m))
		default:
			seg = append(seg, normalize(l, m))
		}
	}
	segs = append(segs, seg)
	lines := func(s string) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
			out = append(out, normalize(l, m))
		}
		return out
	}
	out, errs := lines(stdout), lines(stderr)
	// What a document shows as output may be a failure's message on stderr
	// (a syntax error): then that is the output.
	if len(segs) > 0 && len(segs[0]) > 0 && strings.TrimSpace(stdout) == "" {
		out = errs
	}
	// Logs: an ordered subsequence of stderr.
	at := 0
	for _, want := range logs {
		for at < len(errs) && errs[at] != want {
			at++
		}
		if at == len(errs) {
			return fmt.Sprintf("the log line %q is not on stderr (in order):\n%s", want, strings.Join(errs, "\n"))
		}
		at++
	}
	// Output: each segment a run of consecutive lines, segments in order.
	at = 0
	for _, s := range segs {
		if len(s) == 0 {
			continue
		}
		found := -1
		for i := at; i+len(s) <= len(out); i++ {
			ok := true
			for j := range s {
				if out[i+j] != s[j] {
					ok = false
					break
				}
			}
			if ok {
				found = i
				break
			}
		}
		if found < 0 {
			return fmt.Sprintf("these lines are not in the output (in order):\n%s\n--- output:\n%s", strings.Join(s, "\n"), strings.Join(out, "\n"))
		}
		at = found + len(s)
	}
	return ""
}

// TestCheckTranscript: the matcher takes what it should and refuses a
// drifted line.
func TestCheckTranscript(t *testing.T) {
	tr := transcript{cmd: "tierflow run q.sql", lines: []string{
		"-- embedded cluster: 3 workers on nats://127.0.0.1:37765",
		"| a |", "+---+", "...", "(4 rows)",
	}}
	stdout := "| a |\n+---+\n| 1 |\n| 2 |\n(4 rows)\n"
	stderr := "-- catalog none\n-- embedded cluster: 3 workers on nats://127.0.0.1:40001\n-- query q-0123abcd finished: 4 rows in 12ms\n"
	if msg := checkTranscript(tr, stdout, stderr); msg != "" {
		t.Errorf("a matching run: %s", msg)
	}
	if msg := checkTranscript(tr, strings.Replace(stdout, "(4 rows)", "(41 rows)", 1), stderr); msg == "" {
		t.Error("a drifted row count matched")
	}
	if msg := checkTranscript(tr, stdout, "-- local: one executor\n"); msg == "" {
		t.Error("a missing log line matched")
	}
	bench := transcript{cmd: "bin/tierflow bench planner", lines: []string{"│ vqa-small     │ auto          │ 20    │ 1.000    │"}}
	if msg := checkTranscript(bench, "│ vqa-small │ auto │ 20 │ 0.95 │\n", ""); msg != "" {
		t.Errorf("a measurement with other numbers: %s", msg)
	}
}

// TestReplTranscript replays the REPL session docs/language.md shows, on a
// pseudo-terminal: each line typed after a prompt is sent, and every line
// the session printed must come out in order (timings masked). It showed
// LIMIT 4 giving 4 rows while the REPL gave 41, and timestamps as Go
// prints them.
func TestReplTranscript(t *testing.T) {
	b, err := os.ReadFile("../../docs/language.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "```\ntierflow "+programVersion+". Type")
	if start < 0 {
		t.Fatal("docs/language.md shows no REPL session (a block that starts with the banner)")
	}
	body := doc[start+4:]
	body = body[:strings.Index(body, "```")]
	// The session's command line: the code block before the session.
	launch := regexp.MustCompile("(?m)^tierflow (repl .*)$").FindStringSubmatch(doc[:start])
	if launch == nil {
		t.Fatal("docs/language.md does not show the command that starts the session")
	}
	cmd := exec.Command(os.Args[0], strings.Fields(launch[1])...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), childEnv+"=real", "HOME="+t.TempDir(), "XDG_STATE_HOME=", "TERM=xterm", "NO_COLOR=1")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 200})
	if err != nil {
		t.Fatalf("starting the REPL on a pty: %v", err)
	}
	tm := &ptyTerm{t: t, f: f, more: make(chan struct{}, 1)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			tm.mu.Lock()
			tm.buf.Write(buf[:n])
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
	timing := regexp.MustCompile(`^(Optimizer time|Time): [0-9.]+ ms$`)
	expectLine := func(line string) {
		re := regexp.QuoteMeta(strings.TrimRight(line, " "))
		if m := timing.FindStringSubmatch(line); m != nil {
			re = m[1] + `: [0-9.]+ ms`
		}
		tm.expect(`(?m)` + re + `\s*\r?$`)
	}
	for _, line := range strings.Split(strings.TrimRight(body, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, repl.Prompt):
			tm.expect(regexp.QuoteMeta(strings.TrimRight(repl.Prompt, " ")))
			tm.send(strings.TrimPrefix(line, repl.Prompt) + "\r")
		case strings.HasPrefix(line, repl.ContinuationPrompt):
			tm.expect(regexp.QuoteMeta(strings.TrimSpace(repl.ContinuationPrompt)))
			tm.send(strings.TrimPrefix(line, repl.ContinuationPrompt) + "\r")
		default:
			expectLine(line)
		}
	}
	waitExit(t, cmd)
}
