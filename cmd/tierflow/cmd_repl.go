package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/cmd/tierflow/repl"
	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/inference"
)

// replFlags are the options of `tierflow repl`.
type replFlags struct {
	files    []string // -f: scripts to run, in order
	commands []string // -c: statements to run, after the files
}

// replEngine is the query engine the REPL runs SELECT and INSERT with: the
// operators' local executor with the ONNX model runtime for CROSS JOIN
// LATERAL running the variants each query's plan chose, and `tierflow run`'s
// defaults (SET exec.* changes them per session): `run --local`'s engine.
// Choosing another engine (a cluster) is this one function.
func replEngine(a *app) repl.Engine {
	models := func(variants map[string]string) func(*logical.LateralModel, *arrow.Schema) (func() (dataflow.Operator, error), *arrow.Schema, error) {
		return inference.New(inference.Config{OrtLib: a.g.ortLib, Log: a.err, Variants: variants}).Lateral
	}
	// Streams FROM NATS/JETSTREAM and sinks TO them reach --nats, or a server
	// embedded in this process, opened only when a query first needs one.
	link := newNATSLink(a)
	nh := link.hooks(sources.Fail, 4096, 0)
	return closingEngine{
		Engine: exec.Engine{Options: exec.Options{Stdout: a.out, OnError: sources.Fail, MaxDelay: 2 * time.Second,
			BatchSize: 4096, Parallelism: exec.AllCores, Stream: nh.Stream, Sink: nh.Sink}, Models: models},
		close: link.close,
		a:     a,
	}
}

// closingEngine is an engine holding resources (a NATS connection, an
// embedded server) that the REPL releases when it exits.
type closingEngine struct {
	repl.Engine
	close func()
	a     *app
}

func (e closingEngine) Close() error {
	e.close()
	return nil
}

// Analyze runs an EXPLAIN ANALYZE of the session on an embedded cluster of
// the session's infrastructure (the default three tiers without one): the
// session's catalog goes to the workers as a file, its model files made
// absolute, and the statement as the script.
func (e closingEngine) Analyze(ctx context.Context, q repl.Query, st *lang.Explain, w io.Writer) error {
	ao, err := cluster.ParseAnalyze(st, cluster.AnalyzeOptions{})
	if err != nil {
		return badInput(err)
	}
	base, err := filepath.Abs(q.BaseDir)
	if err != nil {
		return err
	}
	cat := q.Catalog.Clone()
	for _, m := range cat.Models {
		for _, v := range m.Variants {
			if v.File == "" || filepath.IsAbs(v.File) {
				continue
			}
			if p, err := inference.ModelFile(v, base); err == nil {
				if v.File, err = filepath.Abs(p); err != nil {
					return err
				}
			}
		}
	}
	// The file moves: what it names relative to itself must not.
	for _, st := range cat.Streams {
		if strings.EqualFold(st.Source, "file") {
			if st.Subject, err = filepath.Abs(exec.ResolvePath(st.Subject, base, st.Pos.File)); err != nil {
				return err
			}
		}
	}
	for _, t := range cat.Tables {
		if t.Path, err = filepath.Abs(exec.ResolvePath(t.Path, base, t.Pos.File)); err != nil {
			return err
		}
	}
	dir, err := os.MkdirTemp("", "tierflow-analyze-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	catPath := filepath.Join(dir, "catalog.yaml")
	b, err := cat.Marshal()
	if err != nil {
		return err
	}
	if err := os.WriteFile(catPath, b, 0o644); err != nil {
		return err
	}
	inf := q.Infra
	if inf == nil {
		inf = cluster.DefaultInfra()
	}
	c, err := cluster.StartEmbedded(ctx, cluster.Options{Infra: inf, Catalog: catPath, NATS: e.a.g.nats, Auth: e.a.natsAuth(), ServerConfig: e.a.g.natsConfig, OrtLib: e.a.g.ortLib, ModelLog: e.a.err})
	if err != nil {
		return err
	}
	defer c.Close()
	sc := deploy.Script{Filename: "<repl>", Source: lang.Print(st) + ";", BaseDir: base, Catalog: catPath, Nth: 1}
	rep, err := c.ExplainAnalyze(ctx, sc, ao)
	if err != nil {
		return err
	}
	return cluster.WriteAnalysis(w, rep, ao.Format)
}

func newReplCmd(a *app) *cobra.Command { return newReplCmdWith(a, replEngine) }

// newReplCmdWith builds the command over a chosen engine, so tests can run
// the real REPL against a stream that never ends.
func newReplCmdWith(a *app, engine func(*app) repl.Engine) *cobra.Command {
	var f replFlags
	c := &cobra.Command{
		Use:   "repl [flags]",
		Short: "Interactive SQL session: multi-line statements, history, completion, streaming results",
		Long: `repl reads statements ending with ';' (they may span lines) and runs them in one
session: models, streams, tables and sinks created earlier stay visible, SET
changes planner options, EXPLAIN prints plans, and query results print as they
arrive with a status line (rows, elapsed time, rows/s). Ctrl-C cancels the
running query; Ctrl-D or \q quits. \? lists the backslash commands (\d, \explain,
\timing, \format, \i, \o, \q).

On a terminal it has line editing, TAB completion of keywords, names and
columns, and history in $XDG_STATE_HOME/tierflow/history (or
~/.tierflow_history). With -f, -c or piped input it prints no prompts or
colours, stops at the first error and exits 2 for bad input, 1 for a failure.
Results go to standard output, messages and errors to standard error.
--format chooses table (default), json, jsonl or csv.`,
		Example: `  tierflow repl --catalog examples/vqa/catalog.yaml --infra examples/vqa/infra.yaml
  tierflow repl -f examples/streaming/query.sql --format csv > windows.csv
  tierflow repl -c 'SHOW FUNCTIONS;' --format json
  echo 'SHOW MODELS;' | tierflow repl --catalog examples/vqa/catalog.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRepl(cmd.Context(), a, f, engine(a))
		},
	}
	c.Flags().StringArrayVarP(&f.files, "file", "f", nil, "run the statements of FILE and exit (repeatable)")
	c.Flags().StringArrayVarP(&f.commands, "command", "c", nil, "run STATEMENTS and exit (repeatable; after the files)")
	return c
}

func runRepl(ctx context.Context, a *app, f replFlags, engine repl.Engine) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if c, ok := engine.(io.Closer); ok {
		defer c.Close()
	}
	cfg := repl.Config{In: a.in, Out: a.out, Err: a.err, Engine: engine, Format: a.g.format,
		// Declared tensor shapes meet the model files as queries bind, as
		// in `tierflow run`.
		CheckModelArgs: inference.New(inference.Config{OrtLib: a.g.ortLib}).CheckModelArgs}
	// -f FILE takes its catalog and infrastructure as `tierflow run FILE`
	// does (scriptInputs): `repl -f examples/fashion/query.sql` found no
	// stream shelf that run finds in the catalog.yaml beside it.
	in := scriptInputs{catalog: a.g.catalog, infra: a.g.infra}
	if len(f.files) > 0 {
		in = inputsFor(a.g, f.files[0])
	}
	if in.catalog != "" {
		c, err := in.loadCatalog()
		if err != nil {
			return err
		}
		cfg.Catalog = c
	}
	// EXPLAIN, SHOW TIERS and EXPLAIN ANALYZE use --infra, or the default
	// infrastructure `tierflow run` and `explain` use.
	inf, err := in.loadInfra()
	if err != nil {
		return err
	}
	cfg.Infra = inf
	if in.catalogBeside || in.infraBeside {
		in.describe(a.err, builtinInfra)
	}
	script := len(f.files) > 0 || len(f.commands) > 0
	cfg.Interactive = !script && cli.IsTerminal(a.in) && cli.IsTerminal(a.out)
	// Colour only when both ends are a terminal: a pipe in either direction
	// means a script, and scripts get plain text.
	cfg.Color = cli.IsTerminal(a.in) && cli.IsTerminal(a.out) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
	if cfg.Interactive {
		cfg.HistoryFile = repl.HistoryFile()
	}
	s, err := repl.New(cfg)
	if err != nil {
		return badInput(err)
	}
	defer s.Close()

	if cfg.Interactive {
		banner := fmt.Sprintf(`tierflow %s. Type \? for help, \q to quit.`, programVersion)
		return s.RunInteractive(ctx, banner)
	}
	// Ctrl-C stops the running statement cleanly (what is complete has been
	// printed) and ends the script with status 130.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	exit := func(err error) error { return exitFor(ctx, err) }
	if !script {
		return exit(s.RunScript(ctx, "<stdin>", a.in))
	}
	for _, path := range f.files {
		r, err := os.Open(path)
		if err != nil {
			return badInput(err)
		}
		err = s.RunScript(ctx, path, r)
		r.Close()
		if err != nil || s.Quit() {
			return exit(err)
		}
	}
	for _, src := range f.commands {
		if err := s.RunScript(ctx, "-c", strings.NewReader(src)); err != nil || s.Quit() {
			return exit(err)
		}
	}
	return nil
}

// exitFor maps an error the session already printed to the CLI's exit code
// (130 when ctx was interrupted).
func exitFor(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return silentExit{Code: exitInterrupted}
	case repl.IsBadInput(err):
		return silentExit{Code: exitBadInput}
	default:
		return silentExit{Code: exitFailure}
	}
}
