package session

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/physical"
)

// ErrUnsupported marks a statement the session's engine cannot run here
// (EXPLAIN ANALYZE or STOP QUERY without a cluster): the user's input, as
// far as exit codes go.
var ErrUnsupported = errors.New("not supported here")

// unsupported is an ErrUnsupported that reads as written.
type unsupported struct{ msg string }

func (e unsupported) Error() string { return e.msg }
func (e unsupported) Unwrap() error { return ErrUnsupported }

func unsupportedf(format string, args ...any) error {
	return unsupported{fmt.Sprintf(format, args...)}
}

// Engine runs the queries of a Session: operators/exec's in this process
// (`run --local`, the REPL), runtime/cluster's on a cluster (`run`). The
// session has bound every query against its catalog, and planned it when
// it was told to, before the engine sees it.
type Engine interface {
	// Exec starts q and returns its results as a stream. Cancelling ctx
	// stops the query: Next then returns ctx's error promptly.
	Exec(ctx context.Context, q Query) (Stream, error)
}

// Analyzer is an engine that can run EXPLAIN ANALYZE: run the query as its
// plan says, bounded by the statement's options, and write the run against
// the plan to w.
type Analyzer interface {
	Analyze(ctx context.Context, q Query, e *lang.Explain, w io.Writer) error
}

// Placer is an engine that spreads a query's operators over workers (a
// cluster): EXPLAIN prints, after the plan, where each operator's
// instances would run and which share of its input each takes. Instances
// also returns, by the plan's operator (stage) name, the workers it would
// run each on, which EXPLAIN's plan shows where they are more than the
// plan's (physical.Plan.Spread).
type Placer interface {
	Instances(ctx context.Context, q Query, e *lang.Explain, w io.Writer) (map[string][]physical.Worker, error)
}

// Monitor is an engine with a running system to report on: SHOW WORKERS and
// SHOW QUERIES answer from it (ok) rather than from the infrastructure, and
// STOP QUERY stops one of its queries.
type Monitor interface {
	Show(st *lang.Show, w io.Writer) (ok bool, err error)
	Stop(st *lang.StopQuery) error
}

// Query is one statement to run with everything the session knows.
type Query struct {
	Stmt    lang.Statement // *lang.Query or *lang.Insert
	Source  string         // the statement's text, for messages
	Bound   *logical.Plan  // the statement bound against Catalog
	Catalog *catalog.Catalog
	Infra   *infra.Infra // nil when the session has none
	Options planner.Options
	// Settings are every SET of the session as written (planner.*, exec.*),
	// for engines with options of their own.
	Settings map[string]string
	// BaseDir resolves the statement's relative file paths.
	BaseDir string
	// Plan is the optimizer's plan of Bound when the session planned it
	// (Config.Plan): the model variants the engine runs.
	Plan *planner.Result
	// Filename and Script are the whole script the statement is part of,
	// and Nth its place among the script's queries (1-based), for an engine
	// that ships the script's text to other processes (a cluster's
	// coordinator and workers compile it there).
	Filename, Script string
	Nth              int
}

// Variants are the model variants the plan chose, by operator and by model
// (nil when the query was not planned).
func (q Query) Variants() map[string]string {
	if q.Plan == nil || q.Plan.Physical == nil {
		return nil
	}
	return q.Plan.Physical.Variants()
}

// Stream is the result of a running query: batches as they are produced (a
// closed window, a source batch), then io.EOF.
type Stream interface {
	// Schema is the shape of every batch; it is known before the first one.
	Schema() *arrow.Schema
	// Next blocks until the next batch, the end (io.EOF) or ctx is done. The
	// caller releases the record.
	Next(ctx context.Context) (arrow.Record, error)
	// Close stops the query and releases what it holds; safe after io.EOF.
	Close() error
}

// Reporter is a Stream that, once it ended, reports on the run in a
// script's log (rows read, drops, the cluster's summary line) and wherever
// else its engine keeps records (`--stats`).
type Reporter interface {
	Report(log io.Writer) error
}
