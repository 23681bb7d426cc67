package exec

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/operators/session"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/rewrite"
)

// Engine runs a session's queries in this process (session.Engine): `tierflow
// run --local` and the REPL.
type Engine struct {
	// Options are every query's; a session's SET exec.* override them per
	// query (ApplySettings).
	Options Options
	// Models builds the model calls of a query that runs the variants
	// its plan chose (session.Query.Variants; nil when it was not planned):
	// it replaces Options.Lateral when set.
	Models func(variants map[string]string) func(*logical.LateralModel, *arrow.Schema) (func() (dataflow.Operator, error), *arrow.Schema, error)
	// Prepare, when set, sees each query and the options it will run with
	// before it is built, and may change them.
	Prepare func(ctx context.Context, q session.Query, o *Options) error
}

// Exec builds q (the rewrites the cluster applies too: joins in the order
// of least cost by the tables' statistics, scans narrowed to the columns
// the query reads, filters before models) and starts it; its rows arrive on
// the stream as its sink writes them, in the same order.
func (e Engine) Exec(ctx context.Context, q session.Query) (session.Stream, error) {
	opts := e.Options
	if err := opts.ApplySettings(q.Settings); err != nil {
		return nil, err
	}
	if e.Models != nil {
		opts.Lateral = e.Models(q.Variants())
	}
	if e.Prepare != nil {
		if err := e.Prepare(ctx, q, &opts); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	st := &localStream{Pipe: session.NewPipe(q.Bound.Root.Schema(), cancel)}
	opts.Output = st.Writer()
	var stats rewrite.Options
	if q.Catalog != nil {
		stats.Stats = q.Catalog.StatsOf
	}
	built, err := Build(rewrite.ApplyWith(q.Bound, stats), opts)
	if err != nil {
		cancel()
		return nil, err
	}
	st.query = built
	go func() {
		stats, err := built.Run(ctx)
		st.stats = stats
		st.Finish(err)
	}()
	return st, nil
}

// localStream is a local run's results, and once it ended its counts.
type localStream struct {
	*session.Pipe
	stats Stats // set before the pipe finishes
	query *Query
}

// Silent lists what the query's sources wait on (Query.Silent): the REPL's
// status line shows them.
func (s *localStream) Silent(after time.Duration) []sources.Silence { return s.query.Silent(after) }

// Stats are the run's counts; final once the stream ended.
func (s *localStream) Stats() Stats {
	select {
	case <-s.Done():
		return s.stats
	default:
		return Stats{}
	}
}

// RowsWritten is how many rows the query's sink received, once it ended.
func (s *localStream) RowsWritten() int64 { return s.Stats().RowsWritten }

// Summary reports what the run dropped; empty when nothing was.
func (s *localStream) Summary() string {
	st := s.Stats()
	msg := ""
	if len(st.Dropped) > 0 {
		msg = "dropped: " + st.Dropped.String()
	}
	for _, p := range st.Problems {
		msg += "\n  " + p
	}
	return msg
}

// Report writes a script's line about the ended run on log: rows read and
// written, spills, drops, the first bad rows.
func (s *localStream) Report(log io.Writer) error {
	if log == nil {
		return nil
	}
	st := s.Stats()
	fmt.Fprintf(log, "-- %s read, %s written", cli.Count(st.RowsRead, "row"), cli.Count(st.RowsWritten, "row"))
	if st.Spills > 0 {
		fmt.Fprintf(log, ", aggregation state spilled to disk %s (%s)", cli.Count(st.Spills, "time"), cli.Count(st.SpilledRows, "partial row"))
	}
	if st.JoinSpills > 0 {
		fmt.Fprintf(log, ", join tables spilled to disk %s (%s)", cli.Count(st.JoinSpills, "time"), cli.Count(st.JoinSpilledRows, "row"))
	}
	if st.SortRuns > 0 {
		fmt.Fprintf(log, ", sorted to disk in %s (%s)", cli.Count(st.SortRuns, "run"), cli.Count(st.SortSpilledRows, "row"))
	}
	if st.WindowSpills > 0 {
		fmt.Fprintf(log, ", window functions' rows spilled to disk by partition %s (%s)", cli.Count(st.WindowSpills, "time"), cli.Count(st.WindowSpilledRows, "row"))
	}
	if len(st.Dropped) > 0 {
		fmt.Fprintf(log, ", dropped: %s", st.Dropped)
	}
	fmt.Fprintln(log)
	for _, p := range st.Problems {
		fmt.Fprintf(log, "--   %s\n", p)
	}
	return nil
}
