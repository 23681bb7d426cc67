package repl

import (
	"context"
	"errors"

	"github.com/tierflow/tierflow/operators/session"
)

// ErrNoExecutor is returned by NoExecutor: the session runs no queries.
var ErrNoExecutor = errors.New("this session does not run queries")

// Engine runs queries (SELECT, INSERT INTO ... SELECT): the session's
// (operators/session), whose interpreter the REPL shares with `tierflow
// run`. The session binds every query first, so an Engine only sees
// statements that name things the session's catalog holds.
type Engine = session.Engine

// Analyzer is an engine that can run EXPLAIN ANALYZE: run the query as its
// plan says, bounded by the statement's options, and write the run against
// the plan to w.
type Analyzer = session.Analyzer

// Query is one statement to run with everything the session knows.
type Query = session.Query

// Stream is the result of a running query: batches as they are produced (a
// closed window, a source batch), then io.EOF.
type Stream = session.Stream

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
