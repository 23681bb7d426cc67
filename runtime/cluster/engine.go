package cluster

import (
	"context"
	"fmt"
	"io"

	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/session"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// scriptEngine runs a session's queries on the cluster (session.Engine),
// EXPLAIN ANALYZE (session.Analyzer), and SHOW WORKERS, SHOW QUERIES and
// STOP QUERY on its coordinator (session.Monitor).
type scriptEngine struct {
	c  *Cluster
	so ScriptOptions
}

// script is q as a submission: the session's script up to its query, with
// the source settings of the run, then of the script's SET exec.* so far.
func (e *scriptEngine) script(q session.Query) (deploy.Script, error) {
	so := e.so
	sc := deploy.Script{Filename: q.Filename, Source: q.Script, BaseDir: so.BaseDir, Catalog: so.Catalog, CatalogBeside: so.CatalogBeside, Nth: q.Nth}
	x := session.Exec{MaxDelay: so.MaxDelay, BatchSize: so.BatchSize, Replay: so.Replay}
	if so.OnError != "" {
		x.OnError, _ = sources.ParseOnError(so.OnError) // checked by RunScript
	}
	if err := x.Apply(q.Settings); err != nil {
		return sc, err
	}
	sc.MaxDelay, sc.BatchSize, sc.Replay, sc.SourceMaxDelay, sc.StateTTL = x.MaxDelay, x.BatchSize, x.Replay, so.SourceMaxDelay, x.StateTTL
	sc.Planner = session.PlannerValues(q.Settings)
	if so.OnError != "" || x.OnError != sources.Fail {
		sc.OnError = session.OnErrorName(x.OnError)
	}
	return sc, nil
}

// Exec submits q; its rows arrive on the stream as the client writes them.
// An INSERT INTO a file or stdout runs in this process: operators/exec
// opens the target at build time and closes it only in its own Run, so
// every worker would truncate the file and none would flush it. It is
// planned as the coordinator plans the others: its objectives hold, and it
// runs the variants the plan chose.
func (e *scriptEngine) Exec(ctx context.Context, q session.Query) (session.Stream, error) {
	sc, err := e.script(q)
	if err != nil {
		return nil, err
	}
	local := false
	if sk, ok := q.Bound.Root.(*logical.Sink); ok && sk.Sink != nil && localSink(sk.Sink.Kind) {
		local = true
		if err := e.c.planHere(ctx, &sc, q.Bound, q.Catalog, q.Options); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	st := &clusterStream{Pipe: session.NewPipe(q.Bound.Root.Schema(), cancel), stats: e.so.Stats}
	if local {
		go func() {
			local, err := e.c.runLocal(ctx, sc, e.so)
			st.local = local
			st.Finish(err)
		}()
		return st, nil
	}
	// The query's name is chosen here so that its sources can be watched
	// while it runs (watchSources).
	name := coordinator.NewQueryName()
	stopWatch := e.c.watchSources(name, q.Bound, e.so.Log)
	go func() {
		info, err := e.c.client.Submit(ctx, sc, name, st.Writer())
		stopWatch()
		st.info, st.failed = info, err != nil
		st.Finish(err)
	}()
	return st, nil
}

// Analyze runs EXPLAIN ANALYZE of q's query; bounds and a format the run
// was given (`explain --analyze` flags) win over the statement's own.
func (e *scriptEngine) Analyze(ctx context.Context, q session.Query, st *lang.Explain, w io.Writer) error {
	def := AnalyzeOptions{}
	if e.so.Analyze != nil {
		def = *e.so.Analyze
	}
	ao, err := ParseAnalyze(st, AnalyzeOptions{})
	if err != nil {
		return err
	}
	if def.For > 0 || def.MaxRows > 0 {
		ao.For, ao.MaxRows = def.For, def.MaxRows
	}
	if def.Format != "" {
		ao.Format = def.Format
	}
	sc, err := e.script(q)
	if err != nil {
		return err
	}
	sc.Replay = false // EXPLAIN ANALYZE paces the streams itself
	if sk, ok := q.Bound.Root.(*logical.Sink); ok && sk.Sink != nil && localSink(sk.Sink.Kind) {
		fmt.Fprintf(e.so.Log, "-- %s: EXPLAIN ANALYZE runs the SELECT of INSERT INTO %s on the workers and counts its rows; %s (%s) is not written\n", sk.Pos, sk.Sink.Name, sk.Sink.Name, sk.Sink.Kind)
	}
	rep, err := e.c.ExplainAnalyze(ctx, sc, ao)
	if err != nil {
		return err
	}
	return WriteAnalysis(w, rep, ao.Format)
}

// Show answers SHOW WORKERS and SHOW QUERIES from the coordinator.
func (e *scriptEngine) Show(st *lang.Show, w io.Writer) (bool, error) {
	switch st.What {
	case lang.ShowWorkers:
		WriteWorkers(w, e.c.Coordinator.Workers())
		return true, nil
	case lang.ShowQueries:
		WriteQueries(w, e.c.Coordinator.Queries())
		return true, nil
	}
	return false, nil
}

// Stop stops one of the coordinator's queries.
func (e *scriptEngine) Stop(st *lang.StopQuery) error {
	if err := e.c.Coordinator.Stop(st.ID, false); err != nil {
		return fmt.Errorf("%s: %w", st.Pos, err)
	}
	return nil
}

// clusterStream is a submitted query's results and, once it ended, its
// report: the summary line and --stats.
type clusterStream struct {
	*session.Pipe
	stats io.Writer // --stats
	// Set before the pipe finishes: the query's info, or the counts of an
	// INSERT run in this process.
	info  deploy.QueryInfo
	local *exec.Stats
	// failed: the query's error is the command's to print, once.
	failed bool
}

// Report writes the ended query's summary line on log and its --stats.
func (s *clusterStream) Report(log io.Writer) error {
	<-s.Done()
	if st := s.local; st != nil {
		if log != nil {
			fmt.Fprintf(log, "-- %s read, %s written (INSERT INTO runs in this process)", cli.Count(st.RowsRead, "row"), cli.Count(st.RowsWritten, "row"))
			if len(st.Dropped) > 0 {
				fmt.Fprintf(log, ", dropped: %s", st.Dropped)
			}
			fmt.Fprintln(log)
		}
		return nil
	}
	info := s.info
	if info.Query == "" {
		return nil
	}
	if log != nil {
		sum := info
		if s.failed {
			sum.Error = ""
		}
		fmt.Fprintln(log, Summary(sum))
		for _, p := range info.Problems {
			fmt.Fprintf(log, "--   %s\n", p)
		}
	}
	if s.stats != nil {
		return WriteStats(s.stats, info)
	}
	return nil
}
