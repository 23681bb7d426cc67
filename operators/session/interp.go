package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/explain"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/infra"
)

// Output is where a session's statements print: a front end's choice
// (`tierflow run` writes rows in its --format, the REPL renders them as they
// arrive with a status line).
type Output interface {
	// Rows consumes a running query's results until the stream ends, ctx is
	// done or a write fails; the session closes the stream after.
	Rows(ctx context.Context, q Query, st Stream) error
	// Listing prints a SHOW or DESCRIBE.
	Listing(l Listing) error
	// Text is where EXPLAIN's plan, EXPLAIN ANALYZE's run and an engine's
	// own SHOW (Monitor) print.
	Text() io.Writer
}

// Config is what a Session starts from.
type Config struct {
	// Catalog is the session's catalog, which CREATE and DROP change (used,
	// not copied); nil starts empty.
	Catalog *catalog.Catalog
	// Infra answers SHOW TIERS and SHOW WORKERS (unless the engine has a
	// running system, Monitor) and is what EXPLAIN and Plan plan against;
	// nil: those say they need one.
	Infra *infra.Infra
	// Engine runs the queries; nil: a query is ErrUnsupported.
	Engine Engine
	// Output receives results, listings and plans.
	Output Output
	// BaseDir resolves relative file paths: the script's directory.
	BaseDir string
	// Files reads a file's columns for a table or file stream declared
	// without them, relative to a base directory (operators/exec's
	// FileSchemas); nil: such a CREATE is an error.
	Files func(baseDir string) catalog.FileSchemas
	// Stats reads the statistics of tables' files, relative to a base
	// directory (operators/exec's FileStats), for the rewrites' cost-based
	// join order; nil: the catalog's own, or the defaults.
	Stats func(baseDir string) catalog.StatsSource
	// Funcs are the functions queries may call (nil: the built-ins).
	Funcs *expr.Registry
	// CheckModelArgs checks model calls against their files as queries bind
	// (a declared TENSOR shape the model cannot take); nil: no check.
	CheckModelArgs bind.ModelArgChecker
	// Plan plans every query with the session's SET planner.* before the
	// engine runs it: the engine runs the model variants the plan chose,
	// and a query whose objectives no plan meets stops the script. Off: the
	// engine places queries itself (a cluster's coordinator, against the
	// workers present).
	Plan bool
	// AnalyzeQueries runs every query as EXPLAIN ANALYZE does (`tierflow
	// explain --analyze`).
	AnalyzeQueries bool
}

// Session is the one statement interpreter of tierflow: `tierflow run`
// (in this process, --local, or on a cluster) and the REPL each run their
// statements through one. It keeps what the statements make (the catalog
// CREATE and DROP change, what SET changes), answers SET, SHOW and DESCRIBE
// itself, plans EXPLAIN, binds (and plans, Config.Plan) every query once,
// and hands it to its Engine; what is printed, and how, is its Output's.
// A Session runs one statement at a time.
type Session struct {
	cfg      Config
	cat      *catalog.Catalog
	settings *Settings
	funcs    *expr.Registry
	baseDir  string
	// The script being run (Run): its text and the queries seen so far, for
	// engines that ship the script to other processes.
	filename, script string
	nth              int
}

// NewSession starts a session.
func NewSession(cfg Config) *Session {
	s := &Session{cfg: cfg, cat: cfg.Catalog, settings: New(), funcs: cfg.Funcs, baseDir: cfg.BaseDir}
	if s.cat == nil {
		s.cat = &catalog.Catalog{}
	}
	if s.funcs == nil {
		s.funcs = expr.Builtins()
	}
	return s
}

// Catalog is the catalog as the statements so far made it.
func (s *Session) Catalog() *catalog.Catalog { return s.cat }

// Settings are what SET changed so far.
func (s *Session) Settings() *Settings { return s.settings }

// Funcs are the functions the session's queries may call.
func (s *Session) Funcs() *expr.Registry { return s.funcs }

// Infra is the session's infrastructure (nil when it has none).
func (s *Session) Infra() *infra.Infra { return s.cfg.Infra }

// BaseDir is where relative file paths start.
func (s *Session) BaseDir() string { return s.baseDir }

// SetBaseDir moves where relative file paths start (the REPL's \i FILE
// runs FILE's statements relative to FILE).
func (s *Session) SetBaseDir(dir string) { s.baseDir = dir }

// Run parses a script and runs its statements in order, stopping at the
// first that fails.
func (s *Session) Run(ctx context.Context, filename, src string) error {
	script, err := lang.Parse(filename, src)
	if err != nil {
		return err
	}
	s.filename, s.script, s.nth = filename, src, 0
	defer func() { s.filename, s.script, s.nth = "", "", 0 }()
	for _, st := range script.Statements {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.Exec(ctx, st, src); err != nil {
			return err
		}
	}
	return nil
}

// Exec runs one parsed statement; src is the text it was parsed from.
func (s *Session) Exec(ctx context.Context, st lang.Statement, src string) error {
	if s.cfg.Files != nil {
		// A CREATE without columns reads its file from where the
		// running script is.
		s.cat.Files = s.cfg.Files(s.baseDir)
	}
	if s.cfg.Stats != nil {
		s.cat.Stats = s.cfg.Stats(s.baseDir)
	}
	if ok, err := bind.Apply(s.cat, st); ok {
		return err
	}
	if s.cfg.AnalyzeQueries {
		switch q := st.(type) {
		case *lang.Query:
			st = &lang.Explain{Pos: q.Pos, Analyze: true, Query: q}
		case *lang.Insert:
			st = &lang.Explain{Pos: q.Pos, Analyze: true, Insert: q}
		}
	}
	switch st := st.(type) {
	case *lang.Query, *lang.Insert:
		return s.query(ctx, st, src)
	case *lang.Explain:
		if st.Analyze {
			return s.analyze(ctx, st, src)
		}
		return s.explain(ctx, st)
	case *lang.Set:
		return s.settings.Set(st)
	case *lang.Show:
		if m, ok := s.cfg.Engine.(Monitor); ok {
			if done, err := m.Show(st, s.cfg.Output.Text()); done || err != nil {
				return err
			}
		}
		l, err := Show(st, s.cat, s.cfg.Infra, s.funcs)
		if err != nil {
			return err
		}
		return s.cfg.Output.Listing(l)
	case *lang.Describe:
		l, err := Describe(st.Name, bind.Pos(st.Pos).String(), s.cat, s.funcs)
		if err != nil {
			return err
		}
		return s.cfg.Output.Listing(l)
	case *lang.StopQuery:
		if m, ok := s.cfg.Engine.(Monitor); ok {
			return m.Stop(st)
		}
		return unsupportedf("%s: STOP QUERY stops a query running on a cluster; here one query runs at a time in the foreground: press Ctrl-C to stop it", bind.Pos(st.Pos))
	}
	return unsupportedf("%s: %T statements are not run here", bind.Pos(st.Position()), st)
}

// Prepare binds a SELECT or INSERT against the session's catalog and, with
// Config.Plan, plans it: the query as the engine gets it.
func (s *Session) Prepare(ctx context.Context, st lang.Statement, src string) (Query, error) {
	b := bind.New(s.cat)
	b.Funcs = s.funcs
	b.CheckModelArgs = s.cfg.CheckModelArgs
	bound, err := b.Bind(st)
	if err != nil {
		return Query{}, err
	}
	q := Query{Stmt: st, Source: src, Bound: bound, Catalog: s.cat, Infra: s.cfg.Infra, Options: s.settings.Planner,
		Settings: s.settings.Values(), BaseDir: s.baseDir, Filename: s.filename, Script: s.script, Nth: s.nth}
	if !s.cfg.Plan || s.cfg.Infra == nil {
		return q, nil
	}
	res, err := planner.PlanLogical(ctx, bound, s.cat, s.cfg.Infra, s.settings.Planner)
	if err != nil {
		// A query the planner cannot place (no model call, a model
		// without profiles) runs as a cluster's default placement
		// would: each model's most accurate variant.
		return q, nil
	}
	if err := res.Runnable(); err != nil {
		return Query{}, err
	}
	q.Plan = res
	return q, nil
}

// query runs a SELECT or INSERT on the engine; its rows go to the output.
func (s *Session) query(ctx context.Context, st lang.Statement, src string) error {
	if s.cfg.Engine == nil {
		return unsupportedf("%s: this session runs no queries", bind.Pos(st.Position()))
	}
	s.nth++
	q, err := s.Prepare(ctx, st, src)
	if err != nil {
		return err
	}
	stream, err := s.cfg.Engine.Exec(ctx, q)
	if err != nil {
		return err
	}
	defer stream.Close()
	return s.cfg.Output.Rows(ctx, q, stream)
}

// analyze runs EXPLAIN ANALYZE on an engine that can (a cluster).
func (s *Session) analyze(ctx context.Context, e *lang.Explain, src string) error {
	a, ok := s.cfg.Engine.(Analyzer)
	if !ok {
		return unsupportedf("%s: EXPLAIN ANALYZE needs an engine that runs plans on a cluster; this session runs queries locally", bind.Pos(e.Pos))
	}
	s.nth++
	q, err := s.Prepare(ctx, e.Target(), src)
	if err != nil {
		return err
	}
	return a.Analyze(ctx, q, e, s.cfg.Output.Text())
}

// explain plans the statement with the session's options, overridden by
// EXPLAIN's own, and prints the plan (or the frontier).
func (s *Session) explain(ctx context.Context, e *lang.Explain) error {
	opts := s.settings.Planner
	format := "text"
	if err := planner.ExplainOptions(e, &opts, &format, nil); err != nil {
		return invalidf("%v", err)
	}
	res, err := planner.PlanStatement(ctx, e.Target(), s.cat, s.cfg.Infra, opts)
	if err != nil {
		if errors.Is(err, planner.ErrNoInfra) {
			return fmt.Errorf("%s: EXPLAIN needs an infrastructure (--infra FILE): %w", bind.Pos(e.Pos), err)
		}
		return err
	}
	w := s.cfg.Output.Text()
	if res.Frontier != nil {
		return explain.WriteFrontier(w, format, res.Frontier)
	}
	var instances bytes.Buffer
	var placeErr error
	if p, ok := s.cfg.Engine.(Placer); ok && format == "text" {
		// The query as the next one the script submits (EXPLAIN runs
		// none itself).
		q, err := s.Prepare(ctx, e.Target(), s.script)
		if err != nil {
			return err
		}
		q.Nth = s.nth + 1
		stages, err := p.Instances(ctx, q, e, &instances)
		// The plan shows a stage on the workers the engine runs it on
		// (a split join's on its inputs' instances' workers); where the
		// engine cannot place it, the plan still shows, then the error.
		placeErr = err
		for name, ws := range stages {
			res.Physical.Spread(name, ws)
		}
	}
	if err := explain.Write(w, format, res.Physical); err != nil {
		return err
	}
	if _, err := instances.WriteTo(w); err != nil {
		return err
	}
	if placeErr != nil {
		return placeErr
	}
	// As tierflow explain: the plan, then the objective no plan meets
	// (exit 1 at its position).
	return res.Runnable()
}
