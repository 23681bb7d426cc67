package exec

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/session"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/rewrite"
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
	// Explain prints the plan of an EXPLAIN statement against the catalog
	// as the script has made it so far (the CLI plans it with the
	// optimizer); nil: EXPLAIN is an error.
	Explain func(e *lang.Explain, cat *catalog.Catalog, o planner.Options) error
	// Infra answers SHOW TIERS and SHOW WORKERS (nil: they are errors).
	Infra *infra.Infra
	// Print prints the listing of a SHOW or DESCRIBE (nil: as text on
	// Stdout).
	Print func(session.Listing) error
	// Plan, when set, plans each query before it runs, with the script's
	// SET planner.* options, and sets the options that make it run the
	// plan chosen (the model variants); its error (no plan meets the
	// objectives) stops the script. nil: every model call runs what Lateral
	// chooses.
	Plan func(ctx context.Context, bound *logical.Plan, cat *catalog.Catalog, po planner.Options, o *Options) error
	// CheckModelArgs checks model calls against their files when queries
	// bind (bind.Binder.CheckModelArgs); nil: no such check.
	CheckModelArgs bind.ModelArgChecker
}

// RunScript runs a script's statements in order: CREATE/DROP change the
// catalog, queries run to completion (or until ctx ends), SET, SHOW and
// DESCRIBE act as in the REPL (operators/session): SET changes the settings
// of the statements after it. The first failing statement stops the script.
func RunScript(ctx context.Context, filename, src string, so ScriptOptions) error {
	script, err := lang.Parse(filename, src)
	if err != nil {
		return err
	}
	cat := so.Catalog
	if cat == nil {
		cat = &catalog.Catalog{}
	}
	if so.BaseDir == "" {
		so.BaseDir = filepath.Dir(filename)
	}
	if cat.Files == nil {
		cat.Files = FileSchemas{BaseDir: so.BaseDir}
	}
	if cat.Stats == nil {
		cat.Stats = FileStats{BaseDir: so.BaseDir}
	}
	binder := bind.New(cat)
	settings := session.New()
	printListing := so.Print
	if printListing == nil {
		printListing = func(l session.Listing) error { return l.WriteText(so.Stdout) }
	}
	binder.CheckModelArgs = so.CheckModelArgs
	for _, stmt := range script.Statements {
		if err := ctx.Err(); err != nil {
			return err
		}
		if ok, err := bind.Apply(cat, stmt); ok {
			if err != nil {
				return err
			}
			continue
		}
		switch s := stmt.(type) {
		case *lang.Explain:
			if so.Explain == nil || s.Analyze {
				what := "EXPLAIN"
				if s.Analyze {
					what = "EXPLAIN ANALYZE"
				}
				return fmt.Errorf("%s: %w: %s in a script run here", s.Position(), ErrUnsupported, what)
			}
			if err := so.Explain(s, cat, settings.Planner); err != nil {
				return err
			}
		case *lang.Set:
			if err := settings.Set(s); err != nil {
				return err
			}
		case *lang.Show:
			l, err := session.Show(s, cat, so.Infra, binder.Funcs)
			if err != nil {
				return err
			}
			if err := printListing(l); err != nil {
				return err
			}
		case *lang.Describe:
			l, err := session.Describe(s.Name, bind.Pos(s.Pos).String(), cat, binder.Funcs)
			if err != nil {
				return err
			}
			if err := printListing(l); err != nil {
				return err
			}
		case *lang.Query, *lang.Insert:
			plan, err := binder.Bind(stmt)
			if err != nil {
				return err
			}
			opts := so.Options
			if err := opts.ApplySettings(settings.Values()); err != nil {
				return err
			}
			if so.Plan != nil {
				if err := so.Plan(ctx, plan, cat, settings.Planner, &opts); err != nil {
					return err
				}
			}
			// The rewrites the cluster applies too: joins in the order of
			// least cost (by the tables' statistics), scans narrowed to
			// the columns the query reads (a columnar file then decodes
			// only those), filters before models.
			plan = rewrite.ApplyWith(plan, rewrite.Options{Stats: cat.StatsOf})
			if _, insert := stmt.(*lang.Insert); !insert && so.NewOutput != nil {
				// A SELECT's rows; an INSERT's go to its sink.
				w, err := so.NewOutput()
				if err != nil {
					return err
				}
				opts.Output = w
			}
			q, err := Build(plan, opts)
			if err != nil {
				return err
			}
			st, err := q.Run(ctx)
			if so.Log != nil {
				fmt.Fprintf(so.Log, "-- %d rows read, %d rows written", st.RowsRead, st.RowsWritten)
				if st.Spills > 0 {
					fmt.Fprintf(so.Log, ", aggregation state spilled to disk %d times (%d partial rows)", st.Spills, st.SpilledRows)
				}
				if st.JoinSpills > 0 {
					fmt.Fprintf(so.Log, ", join tables spilled to disk %d times (%d rows)", st.JoinSpills, st.JoinSpilledRows)
				}
				if len(st.Dropped) > 0 {
					fmt.Fprintf(so.Log, ", dropped: %s", st.Dropped)
				}
				fmt.Fprintln(so.Log)
				for _, p := range st.Problems {
					fmt.Fprintf(so.Log, "--   %s\n", p)
				}
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: %T statements are not run by `tierflow run`", stmt.Position(), stmt)
		}
	}
	return nil
}

// ApplySettings overrides o with a session's SET exec.* values
// (session.Settings.Values): max_delay, on_error, batch_size, and replay,
// which paces FROM FILE streams at their declared RATE.
func (o *Options) ApplySettings(values map[string]string) error {
	x := session.Exec{MaxDelay: o.MaxDelay, OnError: o.OnError, BatchSize: o.BatchSize, Replay: o.Pace != nil}
	if err := x.Apply(values); err != nil {
		return err
	}
	o.MaxDelay, o.OnError, o.BatchSize = x.MaxDelay, x.OnError, x.BatchSize
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
