package repl

import (
	"context"
	"errors"
	"io"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/planner/logical"
)

// ErrNoExecutor is returned by NoExecutor: the session runs no queries.
var ErrNoExecutor = errors.New("this session does not run queries")

// Engine runs queries (SELECT, INSERT INTO ... SELECT). The REPL binds every
// query first, so an Engine only sees statements that name things the
// session's catalog holds.
type Engine interface {
	// Exec starts q and returns its results as a stream. Cancelling ctx stops
	// the query: Next then returns ctx's error promptly.
	Exec(ctx context.Context, q Query) (Stream, error)
}

// Analyzer is an engine that can run EXPLAIN ANALYZE: run the query as its
// plan says, bounded by the statement's options, and write the run against
// the plan to w.
type Analyzer interface {
	Analyze(ctx context.Context, q Query, e *lang.Explain, w io.Writer) error
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

// summarizer is a Stream that can say, once it ended, what it dropped (late
// or bad rows); the session prints it under the result.
type summarizer interface{ Summary() string }

// EngineFunc adapts a function to Engine.
type EngineFunc func(ctx context.Context, q Query) (Stream, error)

// Exec calls f.
func (f EngineFunc) Exec(ctx context.Context, q Query) (Stream, error) { return f(ctx, q) }

// NoExecutor is an Engine that runs nothing: every query fails with
// ErrNoExecutor, while EXPLAIN, SHOW, DESCRIBE and DDL still work (a
// planning-only session).
func NoExecutor() Engine {
	return EngineFunc(func(context.Context, Query) (Stream, error) { return nil, ErrNoExecutor })
}
