package exec

import (
	"context"
	"io"
	"path/filepath"

	"github.com/tierflow/tierflow/operators/session"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/planner/logical"
)

// ScriptOptions configure RunScript.
type ScriptOptions struct {
	Options
	// Catalog to start from (nil: empty); CREATE statements add to it.
	Catalog *catalog.Catalog
	// NewOutput makes the writer for each SELECT's results (nil: a table on
	// Stdout).
	NewOutput func() (sinks.Writer, error)
	// Log receives per-query summaries (rows, late rows, bad rows); nil: none.
	Log io.Writer
	// Infra answers SHOW TIERS and SHOW WORKERS and is what EXPLAIN plans
	// against (nil: they say they need one).
	Infra *infra.Infra
	// Print prints the listing of a SHOW or DESCRIBE (nil: as text on
	// Stdout).
	Print func(session.Listing) error
	// Plan, when set, sees each bound query before it runs, with the
	// script's SET planner.* options, and may change the options it runs
	// with; its error stops the script. (A session with Config.Plan plans
	// queries itself: `tierflow run --local`.)
	Plan func(ctx context.Context, bound *logical.Plan, cat *catalog.Catalog, po planner.Options, o *Options) error
	// CheckModelArgs checks model calls against their files when queries
	// bind (bind.Binder.CheckModelArgs); nil: no such check.
	CheckModelArgs bind.ModelArgChecker
}

// RunScript runs a script's statements in order in this process: a
// session (operators/session, the interpreter `tierflow run` and the REPL
// share) on this executor. CREATE/DROP change the catalog, queries run to
// completion (or until ctx ends), SET, SHOW and DESCRIBE act as in the REPL:
// SET changes the settings of the statements after it. The first failing
// statement stops the script.
func RunScript(ctx context.Context, filename, src string, so ScriptOptions) error {
	if so.BaseDir == "" {
		so.BaseDir = filepath.Dir(filename)
	}
	eng := Engine{Options: so.Options}
	if so.Plan != nil {
		plan := so.Plan
		eng.Prepare = func(ctx context.Context, q session.Query, o *Options) error {
			return plan(ctx, q.Bound, q.Catalog, q.Options, o)
		}
	}
	out := &session.ScriptOutput{Stdout: so.Stdout, NewOutput: so.NewOutput, Print: so.Print, Log: so.Log}
	s := session.NewSession(session.Config{Catalog: so.Catalog, Infra: so.Infra, Engine: eng, Output: out,
		BaseDir: so.BaseDir, Files: FilesIn, Stats: StatsIn, CheckModelArgs: so.CheckModelArgs})
	return s.Run(ctx, filename, src)
}

// FilesIn reads the columns of a table or file stream declared without them
// (FileSchemas), relative to dir: a session's Config.Files.
func FilesIn(dir string) catalog.FileSchemas { return FileSchemas{BaseDir: dir} }

// StatsIn reads the statistics of tables' files (FileStats), relative to
// dir: a session's Config.Stats.
func StatsIn(dir string) catalog.StatsSource { return FileStats{BaseDir: dir} }

// ApplySettings overrides o with a session's SET exec.* values
// (session.Settings.Values): max_delay, on_error, batch_size, and replay,
// which paces FROM FILE streams at their declared RATE.
func (o *Options) ApplySettings(values map[string]string) error {
	x := session.Exec{MaxDelay: o.MaxDelay, OnError: o.OnError, BatchSize: o.BatchSize, Replay: o.Pace != nil, StateTTL: o.StateTTL}
	if err := x.Apply(values); err != nil {
		return err
	}
	o.MaxDelay, o.OnError, o.BatchSize, o.StateTTL = x.MaxDelay, x.OnError, x.BatchSize, x.StateTTL
	if _, ok := values["exec.replay"]; ok {
		o.Pace = nil
		if x.Replay {
			o.Pace = replayAtRate
		}
	}
	return nil
}

// replayAtRate plays a file stream at its declared RATE (as fast as it
// reads without one).
func replayAtRate(s *catalog.Stream) sources.Pacing {
	if s == nil {
		return sources.Pacing{}
	}
	return sources.Pacing{Rate: s.Rate}
}
