package repl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/session"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/infra"
)

// ErrBadInput marks the user's input as wrong (a statement, a command, a
// setting): non-interactive runs exit 2 on it, other failures exit 1.
var ErrBadInput = errors.New("bad input")

// Config is everything a session starts from.
type Config struct {
	In  io.Reader // statements; a terminal when Interactive
	Out io.Writer // results
	Err io.Writer // errors, command tags, timing, the status line
	// Interactive: stdin and stdout are terminals, so prompts, line editing,
	// history, completion, colour and the status line are on.
	Interactive bool
	Color       bool
	// HistoryFile keeps the interactive history; empty: no history file.
	HistoryFile string
	Catalog     *catalog.Catalog // copied; nil means empty
	Infra       *infra.Infra     // nil: EXPLAIN says it needs one
	Engine      Engine           // nil means NoExecutor()
	Format      string           // initial result format; empty is table
	// CheckModelArgs checks model calls against their files as queries
	// bind, as `tierflow run` does; nil: no check.
	CheckModelArgs bind.ModelArgChecker
}

// Session is one REPL session: its catalog, options and settings. A Session
// runs one statement at a time; only Interrupt may be called concurrently.
type Session struct {
	cfg Config
	// sess is the statement interpreter the REPL shares with `tierflow
	// run`; cat, settings and funcs are its, for completion and \d.
	sess     *session.Session
	cat      *catalog.Catalog
	funcs    *expr.Registry
	settings *session.Settings // what SET changed
	format   string
	timing   bool
	explain  bool // \explain: explain the next statement instead of running it
	out      io.Writer
	outFile  *os.File
	quit     bool
	baseDir  string // directory of the running script: relative FROM FILE paths start there

	mu     sync.Mutex
	cancel context.CancelFunc // of the running statement
}

// New starts a session.
func New(cfg Config) (*Session, error) {
	s := &Session{cfg: cfg, out: cfg.Out}
	cat := &catalog.Catalog{}
	if cfg.Catalog != nil {
		cat = cfg.Catalog.Clone()
	}
	engine := cfg.Engine
	if engine == nil {
		engine = NoExecutor()
	}
	// Queries are planned as `tierflow run --local` plans them: the engine
	// runs the variants the plan chose, and objectives no plan meets fail
	// the statement.
	s.sess = session.NewSession(session.Config{Catalog: cat, Infra: cfg.Infra, Engine: engine, Output: replOutput{s},
		Files: exec.FilesIn, Stats: exec.StatsIn, CheckModelArgs: cfg.CheckModelArgs, Plan: true})
	s.cat, s.funcs, s.settings = s.sess.Catalog(), s.sess.Funcs(), s.sess.Settings()
	if err := s.setFormat(cfg.Format); err != nil {
		return nil, err
	}
	return s, nil
}

// Catalog is the session's catalog (for tests and completion).
func (s *Session) Catalog() *catalog.Catalog { return s.cat }

// Close closes a \o file.
func (s *Session) Close() error { return s.setOutput("") }

// Interrupt cancels the running statement, if any, and reports whether there
// was one. It is what Ctrl-C does while a query runs.
func (s *Session) Interrupt() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel == nil {
		return false
	}
	s.cancel()
	return true
}

func (s *Session) setFormat(f string) error {
	if f == "" {
		f = "table"
	}
	for _, ok := range Formats() {
		if f == ok {
			s.format = f
			return nil
		}
	}
	return badf("unknown format %q (want %s)", f, strings.Join(Formats(), ", "))
}

func (s *Session) setOutput(path string) error {
	if s.outFile != nil {
		err := s.outFile.Close()
		s.outFile, s.out = nil, s.cfg.Out
		if err != nil {
			return err
		}
	}
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return badf("%v", err)
	}
	s.outFile, s.out = f, f
	return nil
}

// color reports whether results go to the terminal with colour on.
func (s *Session) color() bool { return s.cfg.Color && s.outFile == nil }

// runSource parses src (a complete input: one or more statements) and runs its
// statements in order, stopping at the first error, which it prints. name and
// firstLine place errors in the user's file.
func (s *Session) runSource(ctx context.Context, name, src string, firstLine int) error {
	// Pad with the lines before the statement so positions are the file's.
	padded := strings.Repeat("\n", max(firstLine-1, 0)) + src
	script, err := lang.Parse(name, padded)
	if err != nil {
		s.report(padded, err)
		return err
	}
	for _, st := range script.Statements {
		start := time.Now()
		err := s.cancellable(ctx, func(ctx context.Context) error { return s.runStatement(ctx, st, padded) })
		if err != nil {
			if errors.Is(err, context.Canceled) && !isQuery(st) {
				fmt.Fprintln(s.cfg.Err, "Cancelled.") // queries say how far they got
			}
			s.report(padded, err)
			return err
		}
		if s.timing {
			fmt.Fprintf(s.cfg.Err, "Time: %.3f ms\n", float64(time.Since(start).Microseconds())/1000)
		}
	}
	return nil
}

// cancellable runs fn under a context that Interrupt (Ctrl-C) cancels.
func (s *Session) cancellable(ctx context.Context, fn func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	s.cancel = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.cancel = nil
		s.mu.Unlock()
	}()
	return fn(ctx)
}

func isQuery(st lang.Statement) bool {
	switch st.(type) {
	case *lang.Query, *lang.Insert:
		return true
	}
	return false
}

// report prints err: syntax and bind errors with their line and a caret.
func (s *Session) report(src string, err error) {
	w := s.cfg.Err
	red := func(m string) string {
		if s.cfg.Color {
			return "\x1b[31m" + m + "\x1b[0m"
		}
		return m
	}
	var pe *lang.Error
	if errors.As(err, &pe) {
		fmt.Fprintln(w, red(pe.Pretty()))
		return
	}
	var es bind.Errors
	if errors.As(err, &es) {
		for _, e := range es {
			fmt.Fprintln(w, red(caret(src, e.Error(), e.Pos.Line, e.Pos.Col)))
		}
		return
	}
	var be *bind.Error
	if errors.As(err, &be) {
		fmt.Fprintln(w, red(caret(src, be.Error(), be.Pos.Line, be.Pos.Col)))
		return
	}
	if errors.Is(err, context.Canceled) {
		return // the cancel message is printed where the query stopped
	}
	msg := err.Error()
	if !positioned.MatchString(msg) {
		msg = "error: " + msg
	}
	fmt.Fprintln(w, red(msg))
}

// positioned matches a message that starts with FILE:LINE[:COL]: already.
var positioned = regexp.MustCompile(`^\S+:\d+(:\d+)?: `)

// caret renders msg, the source line and a caret under the column.
func caret(src, msg string, line, col int) string {
	lines := strings.Split(src, "\n")
	if line < 1 || line > len(lines) {
		return msg
	}
	return msg + "\n" + lang.Caret(lines[line-1], col)
}

// IsBadInput reports whether err is the user's input being wrong (exit 2)
// rather than a failure while running (exit 1).
func IsBadInput(err error) bool {
	if errors.Is(err, planner.ErrInfeasible) {
		// Positioned like a binding problem, but the query is well
		// formed: no plan of this infrastructure meets it.
		return false
	}
	for _, kind := range []error{ErrBadInput, lang.ErrSyntax, bind.ErrBind, catalog.ErrUnknown, catalog.ErrExists, planner.ErrNoInfra, exec.ErrUnsupported, session.ErrUnsupported, session.ErrInvalid} {
		if errors.Is(err, kind) {
			return true
		}
	}
	var es bind.Errors
	var be *bind.Error
	// A file the statement reads that is not there, or one whose rows do not
	// fit (an error that blames the input, as runtime/deploy's InputError),
	// is the input's fault too.
	var ie interface{ InputError() bool }
	return errors.As(err, &es) || errors.As(err, &be) || errors.Is(err, fs.ErrNotExist) ||
		errors.As(err, &ie) && ie.InputError()
}

// inputError is a message about the user's input: it reads as written and
// matches ErrBadInput (and whatever its message wraps with %w).
type inputError struct{ err error }

func (e inputError) Error() string   { return e.err.Error() }
func (e inputError) Unwrap() []error { return []error{ErrBadInput, e.err} }

// badf formats an error about the user's input.
func badf(format string, args ...any) error {
	return inputError{fmt.Errorf(format, args...)}
}

// kindError is a message of a given kind (a sentinel) that reads as written.
type kindError struct {
	kind error
	msg  string
}

func (e kindError) Error() string { return e.msg }
func (e kindError) Unwrap() error { return e.kind }
