package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/session"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/runtime/connectors"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// ScriptOptions configure RunScript.
type ScriptOptions struct {
	// BaseDir resolves relative paths (default: the script's directory).
	BaseDir string
	// Catalog is a catalog YAML file the script starts from (optional);
	// CatalogBeside says it was found beside the script, not named, so the
	// script's CREATEs replace its entries (deploy.Script.CatalogBeside).
	Catalog       string
	CatalogBeside bool
	// NewOutput makes the writer for each SELECT's rows (nil: a table on
	// Stdout).
	NewOutput func() (sinks.Writer, error)
	// Stdout receives SHOW output and default tables (default os.Stdout).
	Stdout io.Writer
	// Log receives a summary per query: rows, time, bytes between tiers.
	Log io.Writer
	// Source settings of every query (`tierflow run` --on-error,
	// --max-delay); zero values are operators/exec's defaults.
	OnError   string
	MaxDelay  time.Duration
	BatchSize int
	// SourceMaxDelay bounds a message source's wait for a partial batch
	// (`--source-max-delay`); Replay feeds file streams at their RATE as
	// live streams (`--replay`).
	SourceMaxDelay time.Duration
	Replay         bool
	// Stats, when set, receives each query's summary (control.Summary) as
	// one line of JSON when it ends (`--stats FILE`).
	Stats io.Writer
	// Print prints the listing of a SHOW or DESCRIBE (nil: as text on
	// Stdout).
	Print func(session.Listing) error
	// Analyze, when set, runs every query as EXPLAIN ANALYZE does with
	// these bounds (`tierflow explain --analyze`); its bounds and format,
	// where set, win over an EXPLAIN ANALYZE statement's own.
	Analyze *AnalyzeOptions
}

// RunScript runs a script's statements in order on the cluster, as
// `tierflow run` does locally: a session (operators/session, the
// interpreter `tierflow run --local` and the REPL share) on the cluster's
// engine. Definitions apply to the queries after them, each query is
// submitted to the coordinator (which places it against the workers
// present) and its rows stream to NewOutput's writer, SET, SHOW and
// DESCRIBE act as in the REPL (SHOW WORKERS and SHOW QUERIES answer from
// the coordinator), STOP QUERY stops one of its queries. The first failing
// statement stops the script.
func (c *Cluster) RunScript(ctx context.Context, filename, src string, so ScriptOptions) error {
	if so.OnError != "" {
		if _, err := sources.ParseOnError(so.OnError); err != nil {
			return err
		}
	}
	if so.Stdout == nil {
		so.Stdout = os.Stdout
	}
	if so.BaseDir == "" {
		so.BaseDir = filepath.Dir(filename)
	}
	// The catalog as the script makes it, for EXPLAIN and for binding each
	// query here; the coordinator and the workers compile the script's
	// text themselves, in their processes.
	cat, err := deploy.Script{Catalog: so.Catalog, CatalogBeside: so.CatalogBeside}.LoadCatalog()
	if err != nil {
		return err
	}
	out := &session.ScriptOutput{Stdout: so.Stdout, NewOutput: so.NewOutput, Print: so.Print, Log: so.Log}
	s := session.NewSession(session.Config{Catalog: cat, Infra: c.infra, Engine: &scriptEngine{c: c, so: so}, Output: out,
		BaseDir: so.BaseDir, Files: exec.FilesIn, AnalyzeQueries: so.Analyze != nil})
	return s.Run(ctx, filename, src)
}

// Summary is one line about a finished query: state, rows, time, workers
// and the bytes it moved between tiers.
func Summary(q deploy.QueryInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "-- query %s %s: %s", q.Query, q.State, cli.Count(q.ResultRows, "row"))
	if !q.Ended.IsZero() {
		fmt.Fprintf(&b, " in %s", q.Ended.Sub(q.Submitted).Round(time.Millisecond))
	}
	fmt.Fprintf(&b, " on %s", cli.Count(len(q.Workers), "worker"))
	var read int64
	for _, op := range q.Operators {
		if strings.HasPrefix(op.Operator, "scan ") {
			read += op.RowsOut
		}
	}
	if read > 0 {
		fmt.Fprintf(&b, ", %s read", cli.Count(read, "row"))
	}
	if len(q.Dropped) > 0 {
		fmt.Fprintf(&b, ", dropped: %s", q.Dropped)
	}
	b.WriteString(latencyNote(q))
	tb := q.TierBytes()
	keys := make([]string, 0, len(tb))
	for k := range tb {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i == 0 {
			b.WriteString("; bytes")
		}
		fmt.Fprintf(&b, " %s %d", k, tb[k])
	}
	for _, r := range q.Recoveries {
		fmt.Fprintf(&b, "; recovered from the loss of %s at epoch %d, rows again after %.2fs", r.LostWorker, r.Epoch, r.Seconds)
		if r.LostMessages > 0 {
			fmt.Fprintf(&b, " (%d core NATS messages published while it was down are lost)", r.LostMessages)
		}
	}
	for _, r := range q.Replans {
		fmt.Fprintf(&b, "; re-planned at epoch %d (%s): %s -> %s", r.Epoch, r.Reason, r.Old, r.New)
		if r.Seconds > 0 {
			fmt.Fprintf(&b, ", rows again after %.2fs", r.Seconds)
		}
	}
	if q.NetworkCost > 0 || q.ComputeCost > 0 {
		fmt.Fprintf(&b, "; measured cost: network %.3g, compute %.3g", q.NetworkCost, q.ComputeCost)
	}
	if q.Error != "" {
		fmt.Fprintf(&b, "; %s", q.Error)
	}
	return b.String()
}

// WriteStats writes a finished query's summary (`--stats`) as one line of
// JSON.
func WriteStats(w io.Writer, info deploy.QueryInfo) error {
	b, err := json.Marshal(info.Summary())
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// latencyNote is "; latency p50 ... ms" when the query's sinks measured any
// rows, with the share over LATENCY when it has one.
func latencyNote(q deploy.QueryInfo) string {
	h, missed := q.EndToEnd()
	if h.Count == 0 {
		return ""
	}
	l := control.Percentiles(h)
	s := fmt.Sprintf("; latency p50 %.3g p95 %.3g p99 %.3g ms", l.P50, l.P95, l.P99)
	if q.LatencySLOMs > 0 {
		s += fmt.Sprintf(", %.2f%% of rows over LATENCY %g ms", 100*float64(missed)/float64(h.Count), q.LatencySLOMs)
	}
	return s
}

// WriteWorkers prints SHOW WORKERS.
func WriteWorkers(w io.Writer, ws []deploy.WorkerInfo) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "name\ttier\tlocation\ttype\tcpus\tgpus\tmemory\tqueries\tlast seen")
	for _, x := range ws {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%.1f GiB\t%s\t%s ago\n", x.Name, x.Tier, x.Location, x.Type, x.CPUs, len(x.GPUs),
			float64(x.MemoryBytes)/(1<<30), strings.Join(x.Queries, ","), time.Since(x.LastSeen).Round(time.Millisecond))
	}
	tw.Flush()
}

// WriteQueries prints SHOW QUERIES: a line per query with its end-to-end
// latency, then, for a running query, the coordinator's live estimates per
// operator and per link (runtime/control).
func WriteQueries(w io.Writer, qs []deploy.QueryInfo) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "query\towner\tstate\tpriority\tworkers\tbusy\trows\tprogress\tdropped\tp50 ms\tp99 ms\tslo miss\tstarted\terror")
	for _, q := range qs {
		p50, p99, miss, dropped := "-", "-", "-", "-"
		prio, busy, prog := "-", "-", "-"
		if q.Priority != "" {
			prio = q.Priority
		}
		// Per worker, the share of its time the query's model batches
		// took (its inference scheduler's count).
		var shares []string
		for _, w := range q.Workers {
			if s, ok := q.Sched[w]; ok {
				shares = append(shares, fmt.Sprintf("%s %.0f%%", w, 100*s.Share))
			}
		}
		if len(shares) > 0 {
			busy = strings.Join(shares, ", ")
		}
		if q.InputRows > 0 {
			prog = fmt.Sprintf("%.0f%%", 100*q.Progress)
			if q.Ended.IsZero() && q.ETASeconds > 0 {
				prog += fmt.Sprintf(" eta %.0fs", q.ETASeconds)
			}
		}
		if len(q.Dropped) > 0 {
			dropped = q.Dropped.String()
		}
		if h, missed := q.EndToEnd(); h.Count > 0 {
			l := control.Percentiles(h)
			p50, p99 = fmt.Sprintf("%.3g", l.P50), fmt.Sprintf("%.3g", l.P99)
			if q.LatencySLOMs > 0 {
				miss = fmt.Sprintf("%.2f%%", 100*float64(missed)/float64(h.Count))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", q.Query, q.Owner, q.State, prio, strings.Join(q.Workers, ","), busy,
			q.ResultRows, prog, dropped, p50, p99, miss, q.Submitted.Format(time.TimeOnly), q.Error)
	}
	tw.Flush()
	for _, q := range qs {
		if q.Estimates == nil || q.Estimates.Samples == 0 || !q.Ended.IsZero() {
			continue
		}
		WriteEstimates(w, q.Query, *q.Estimates)
	}
}

// WriteEstimates prints a query's live estimates.
func WriteEstimates(w io.Writer, query string, e control.Estimates) {
	fmt.Fprintf(w, "estimates of %s (%d samples, smoothed)\n", query, e.Samples)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  id\toperator\tin rows/s\tselectivity\tbatch rows\tmodel ms/batch\tqueue\tbusy")
	for _, o := range e.Operators {
		fmt.Fprintf(tw, "  %d\t%s\t%.4g\t%.3g\t%.3g\t%.3g\t%.2g\t%.1f%%\n", o.OperatorID, o.Operator, o.InputRate, o.Selectivity,
			o.BatchRows, o.ModelMsPerBatch, o.QueueLength, 100*o.Busy)
	}
	tw.Flush()
	if len(e.Links) == 0 {
		return
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  link\tfrom\tto\tMiB/s\trtt ms")
	for _, l := range e.Links {
		fmt.Fprintf(tw, "  e%d %d->%d\t%s\t%s\t%.4g\t%.3g\n", l.Link.Edge, l.Link.Sender, l.Link.Receiver, l.From, l.To,
			l.BandwidthBps/(1<<20), l.RTTMs)
	}
	tw.Flush()
}

// watchSources says on log, once per stream, when a stream the query reads
// has given its scan nothing yet sources.WaitNotice after the query began
// to run (the coordinator's view of the workers' reports), as a local run
// does (exec.WatchSources): a subject nothing publishes to then reads as a
// wait, not a hang. It returns the function that stops it.
func (c *Cluster) watchSources(query string, plan *logical.Plan, log io.Writer) func() {
	streams := map[string]string{} // scan operator -> what it reads
	logical.Walk(plan.Root, func(n logical.Node) bool {
		if sc, ok := n.(*logical.Scan); ok && sc.Stream != nil {
			streams["scan "+sc.Stream.Name] = streamWhat(sc.Stream)
		}
		return true
	})
	if log == nil || c.Coordinator == nil || len(streams) == 0 {
		return func() {}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		said := map[string]bool{}
		var running time.Time
		tick := time.NewTicker(sources.WaitNotice / 6)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-tick.C:
				info, ok := c.Coordinator.Query(query)
				if !ok || info.State != deploy.StateRunning {
					continue
				}
				if running.IsZero() {
					running = now
				}
				if now.Sub(running) < sources.WaitNotice {
					continue
				}
				rows := map[string]int64{}
				for _, op := range info.Operators {
					rows[op.Operator] += op.RowsOut
				}
				for op, what := range streams {
					if rows[op] == 0 && !said[op] {
						said[op] = true
						fmt.Fprintf(log, "-- %s\n", sources.Silence{What: what, For: now.Sub(running)}.Text())
					}
				}
			}
		}
	}()
	return func() { close(stop); <-done }
}

// streamWhat is what a stream's source reads, as the waiting notices say.
func streamWhat(st *catalog.Stream) string {
	switch strings.ToLower(st.Source) {
	case "nats":
		return fmt.Sprintf("stream %s, NATS subject %q", st.Name, st.Subject)
	case "jetstream":
		return fmt.Sprintf("stream %s, JetStream subject %q", st.Name, st.Subject)
	}
	return fmt.Sprintf("stream %s, file %q", st.Name, st.Subject)
}

// planHere plans a query that runs in this process (runLocal) on the
// cluster's infrastructure: an objective no plan meets fails it, at the
// objective, as the coordinator fails the others; a plan sets the variants
// it runs. A query the planner cannot place runs as planned by the
// runtime's rules, as on the cluster.
func (c *Cluster) planHere(ctx context.Context, sc *deploy.Script, plan *logical.Plan, cat *catalog.Catalog, po planner.Options) error {
	res, err := planner.PlanLogical(ctx, plan, cat, c.infra, po)
	if err != nil {
		return nil
	}
	if err := res.Runnable(); err != nil {
		return err
	}
	sc.Variants = res.Physical.Variants()
	return nil
}

// runLocal runs one query in this process (operators/exec), with the model
// runtime and the NATS connectors on the cluster's server.
func (c *Cluster) runLocal(ctx context.Context, sc deploy.Script, so ScriptOptions) (*exec.Stats, error) {
	eo := exec.Options{Stdout: so.Stdout, Notices: so.Log}
	ExecHooks(c.conns[0], c.ortLib, c.modelLog, 0)(&eo, deploy.ExecPart{Variants: sc.Variants})
	policy := sources.Fail
	if so.OnError != "" {
		policy, _ = sources.ParseOnError(so.OnError) // checked by RunScript
	}
	nh := connectors.Hooks{Conn: func() (*nats.Conn, error) { return c.conns[0], nil },
		Sources: connectors.SourceConfig{OnError: policy, MaxRows: so.BatchSize, MaxDelay: so.SourceMaxDelay},
		Sinks:   connectors.SinkConfig{End: true}}
	eo.Stream, eo.Sink = nh.Stream, nh.Sink
	q, _, err := sc.Build(nil, eo)
	if err != nil {
		return nil, err
	}
	st, err := q.Run(ctx)
	return &st, err
}

// localSink: sinks to a file or stdout run in this process (see RunScript;
// the coordinator refuses them); NATS, JetStream and discard sinks run on
// the workers (a discard sink opens nothing, so any number may hold it).
func localSink(kind string) bool { return !deploy.WorkersWrite(kind) }
