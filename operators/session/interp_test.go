package session_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/session"
)

// recorder is an Engine (and Analyzer) that records what it is given and
// returns no rows: a double beside the real engines (operators/exec,
// runtime/cluster), which their own tests and cmd/tierflow's
// TestInterpreter* run through this interpreter.
type recorder struct {
	queries  []session.Query
	analyzed []session.Query
}

func (r *recorder) Exec(_ context.Context, q session.Query) (session.Stream, error) {
	r.queries = append(r.queries, q)
	return emptyStream{q.Bound.Root.Schema()}, nil
}

func (r *recorder) Analyze(_ context.Context, q session.Query, _ *lang.Explain, w io.Writer) error {
	r.analyzed = append(r.analyzed, q)
	_, err := io.WriteString(w, "analyzed\n")
	return err
}

type emptyStream struct{ schema *arrow.Schema }

func (s emptyStream) Schema() *arrow.Schema                      { return s.schema }
func (s emptyStream) Next(context.Context) (arrow.Record, error) { return nil, io.EOF }
func (s emptyStream) Close() error                               { return nil }

const script = `CREATE TABLE t (a BIGINT, b VARCHAR) FROM FILE 't.csv' FORMAT CSV;
SELECT a FROM t;
SET exec.batch_size = 7;
SET planner.strategy = 'exhaustive';
EXPLAIN ANALYZE SELECT b FROM t;
INSERT INTO s SELECT a, b FROM t WHERE a > 1;
`

// TestSessionHandsEachQueryBoundOnce: a script is parsed once and each
// query bound once, against the catalog as the statements before it made
// it, with the settings of the SETs before it; the queries are numbered in
// the script's order (EXPLAIN ANALYZE's included), with the script's text,
// for engines that ship it to other processes.
func TestSessionHandsEachQueryBoundOnce(t *testing.T) {
	rec := &recorder{}
	var out strings.Builder
	s := session.NewSession(session.Config{Engine: rec, Output: &session.ScriptOutput{Stdout: &out}})
	src := "CREATE SINK s TO STDOUT FORMAT CSV;\n" + script
	if err := s.Run(context.Background(), "q.sql", src); err != nil {
		t.Fatal(err)
	}
	if len(rec.queries) != 2 || len(rec.analyzed) != 1 {
		t.Fatalf("%d queries run, %d analyzed: want 2 and 1", len(rec.queries), len(rec.analyzed))
	}
	first, analyzed, insert := rec.queries[0], rec.analyzed[0], rec.queries[1]
	for i, c := range []struct {
		q     session.Query
		nth   int
		batch string
	}{{first, 1, ""}, {analyzed, 2, "7"}, {insert, 3, "7"}} {
		if c.q.Bound == nil || c.q.Nth != c.nth || c.q.Filename != "q.sql" || c.q.Script != src || c.q.Settings["exec.batch_size"] != c.batch {
			t.Errorf("query %d: bound %v, nth %d (want %d), file %q, settings %v (want batch_size %q)", i, c.q.Bound != nil, c.q.Nth, c.nth, c.q.Filename, c.q.Settings, c.batch)
		}
	}
	if first.Options.Strategy == insert.Options.Strategy {
		t.Errorf("SET planner.strategy did not reach the query after it: %v", insert.Options.Strategy)
	}
	if _, ok := insert.Stmt.(*lang.Insert); !ok {
		t.Errorf("third query is %T", insert.Stmt)
	}
	// A SELECT prints its (empty) table; an INSERT's rows went to its sink.
	if got := out.String(); got != "(0 rows)\nanalyzed\n" {
		t.Errorf("output %q", got)
	}
}

// TestSessionSaysWhatItsEngineCannotRun: without an engine that analyzes or
// watches a running system, EXPLAIN ANALYZE and STOP QUERY are
// ErrUnsupported at their position, and the statements before them ran.
func TestSessionSaysWhatItsEngineCannotRun(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"STOP QUERY q1;", "q.sql:2:1: STOP QUERY stops a query running on a cluster"},
		{"EXPLAIN ANALYZE SELECT a FROM t;", "q.sql:2:1: EXPLAIN ANALYZE needs an engine that runs plans on a cluster"},
	} {
		rec := struct{ session.Engine }{&recorder{}} // Exec only
		s := session.NewSession(session.Config{Engine: rec, Output: &session.ScriptOutput{Stdout: io.Discard}})
		err := s.Run(context.Background(), "q.sql", "CREATE TABLE t (a BIGINT) FROM FILE 't.csv' FORMAT CSV;\n"+c.src)
		if !errors.Is(err, session.ErrUnsupported) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrUnsupported %q", c.src, err, c.want)
		}
		if s.Catalog().Table("t") == nil {
			t.Errorf("%s: the CREATE before it did not run", c.src)
		}
	}
}
