package repl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/chzyer/readline"

	"github.com/tierflow/tierflow/lang"
)

// Prompts: the continuation prompt has the same width, so a statement typed
// over several lines stays aligned.
const (
	Prompt             = "tierflow> "
	ContinuationPrompt = "      ..> "
)

// RunScript runs the statements and backslash commands read from r, named
// name in errors, without prompts, and stops at the first error (it is
// printed, and returned: IsBadInput tells the exit code). It is what
// `repl -f`, `repl -c` and piped input do.
func (s *Session) RunScript(ctx context.Context, name string, r io.Reader) error {
	return s.runScript(ctx, name, r, true)
}

// Quit reports whether \q was given.
func (s *Session) Quit() bool { return s.quit }

func (s *Session) runScript(ctx context.Context, name string, r io.Reader, stopOnError bool) error {
	if st, err := os.Stat(name); err == nil && !st.IsDir() {
		defer func(prev string) { s.baseDir = prev }(s.baseDir)
		s.baseDir = filepath.Dir(name)
	}
	br := bufio.NewReader(r)
	var buf strings.Builder
	start, lineNo := 0, 0
	var first error
	fail := func(err error) bool {
		if first == nil {
			first = err
		}
		return stopOnError
	}
	for !s.quit {
		line, rerr := br.ReadString('\n')
		if line == "" && rerr != nil {
			if rerr != io.EOF {
				return rerr
			}
			break
		}
		lineNo++
		text := strings.TrimRight(line, "\r\n")
		if buf.Len() == 0 {
			t := strings.TrimSpace(text)
			if t == "" {
				continue
			}
			if strings.HasPrefix(t, `\`) {
				if err := s.runCommand(ctx, t); err != nil {
					fmt.Fprintf(s.cfg.Err, "%s:%d: %v\n", name, lineNo, err)
					if fail(err) {
						return err
					}
				}
				continue
			}
			start = lineNo
		}
		buf.WriteString(text)
		buf.WriteByte('\n')
		if lang.IsComplete(buf.String()) {
			err := s.runSource(ctx, name, buf.String(), start)
			buf.Reset()
			if err != nil && fail(err) {
				return err
			}
		}
	}
	// Like psql -c, a last statement may omit its ';'.
	if strings.TrimSpace(buf.String()) != "" && !s.quit {
		if err := s.runSource(ctx, name, buf.String(), start); err != nil {
			fail(err)
		}
	}
	return first
}

// RunInteractive reads statements from the terminal with line editing,
// history and completion until \q or Ctrl-D. Errors are printed and the
// session goes on; Ctrl-C cancels a running query or clears the line.
func (s *Session) RunInteractive(ctx context.Context, banner string) error {
	rl, err := readline.NewEx(&readline.Config{
		Prompt:                 Prompt,
		HistoryFile:            s.cfg.HistoryFile,
		DisableAutoSaveHistory: true, // a multi-line statement is one entry
		HistorySearchFold:      true,
		AutoComplete:           &completer{s: s},
		InterruptPrompt:        "^C",
		EOFPrompt:              `\q`,
		// A terminal that reports no size (some emulators, a fresh pty) would
		// disable completion: assume 80 columns.
		FuncGetWidth: func() int {
			if w := readline.GetScreenWidth(); w > 0 {
				return w
			}
			return 80
		},
		Stdout: s.cfg.Out,
		Stderr: s.cfg.Err,
	})
	if err != nil {
		return err
	}
	defer closeSoon(rl)

	// While a query runs the terminal is not in raw mode, so Ctrl-C arrives as
	// SIGINT: it cancels the query, never the REPL.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-sig:
				s.Interrupt()
			case <-stop:
				return
			}
		}
	}()

	if banner != "" {
		fmt.Fprintln(s.cfg.Err, banner)
	}
	var buf []string
	for !s.quit {
		if len(buf) == 0 {
			rl.SetPrompt(Prompt)
		} else {
			rl.SetPrompt(ContinuationPrompt)
		}
		line, err := rl.Readline()
		if errors.Is(err, readline.ErrInterrupt) {
			buf = nil // Ctrl-C drops the line and any unfinished statement
			continue
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if len(buf) == 0 {
			t := strings.TrimSpace(line)
			switch {
			case t == "":
				continue
			case t == "quit" || t == "exit":
				s.quit = true
				continue
			case strings.HasPrefix(t, `\`):
				_ = rl.SaveHistory(t)
				if err := s.runCommand(ctx, t); err != nil {
					s.report("", err)
				}
				continue
			}
		}
		buf = append(buf, line)
		src := strings.Join(buf, "\n")
		if !lang.IsComplete(src) {
			continue
		}
		buf = nil
		_ = rl.SaveHistory(strings.Join(strings.Fields(src), " "))
		_ = s.runSource(ctx, "<stdin>", src, 1) // printed; the session goes on
	}
	return nil
}

// closeSoon closes rl but waits for it only briefly: after Ctrl-D typed
// while a query ran (the terminal cooked, so the reader saw end of file),
// readline's Close waits forever on its reader. The terminal is already out
// of raw mode between reads, so nothing is left to restore.
func closeSoon(rl *readline.Instance) {
	done := make(chan struct{})
	go func() {
		rl.Close()
		close(done)
	}()
	t := time.NewTimer(500 * time.Millisecond)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// HistoryFile is where interactive history persists for this user:
// $XDG_STATE_HOME/tierflow/history when XDG_STATE_HOME is set (the directory
// is created), ~/.tierflow_history otherwise; empty when neither is known.
func HistoryFile() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		dir := d + string(os.PathSeparator) + "tierflow"
		if err := os.MkdirAll(dir, 0o700); err == nil {
			return dir + string(os.PathSeparator) + "history"
		}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return home + string(os.PathSeparator) + ".tierflow_history"
}
