package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/cmd/tierflow/repl"
	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/session"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/connectors"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/dataaware"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/inference"
	"github.com/tierflow/tierflow/runtime/inference/sched"
	"github.com/tierflow/tierflow/runtime/policy"
)

// runFlags are the options of `tierflow run`.
type runFlags struct {
	output    string
	onError   string
	maxDelay  time.Duration
	batch     int
	parallel  int
	memLimit  string
	local     bool
	processes bool
	// heartbeat is the cluster workers' heartbeat interval (0: the
	// coordinator's default).
	heartbeat time.Duration
	// sourceMaxDelay bounds a message source's wait for a partial batch;
	// replay feeds FROM FILE streams at their RATE as live streams; stats
	// names the file the run's summary goes to.
	sourceMaxDelay time.Duration
	replay         bool
	stats          string
	// replan has the coordinator re-plan running queries whose links do
	// not keep up or whose live numbers drift from the plan's by more than
	// replanDrift times (control.DefaultPolicies; 0 turns drift off).
	replan      bool
	noSLOPolicy bool
	replanDrift float64
	// replanDataAware adds the SneakPeek policy (needs evidence);
	// policies adds registered policies by name (runtime/policy).
	replanDataAware bool
	policies        []string
	// linkTraces shape tier links to bandwidth traces (--link-trace).
	linkTraces []string
	// sched is the embedded workers' scheduling policy; evidence the
	// directory of the SneakPeek estimator's training sample.
	sched, evidence string
	// analyze runs every query as EXPLAIN ANALYZE (`tierflow explain --analyze`).
	analyze *cluster.AnalyzeOptions
}

func newRunCmd(a *app) *cobra.Command {
	var f runFlags
	c := &cobra.Command{
		Use:   "run [flags] QUERY.sql|-",
		Short: "Run a script's statements locally: CREATE ... then queries, printing results as they stream",
		Long: `run executes the statements of a script in order: CREATE and DROP change the
catalog (--catalog loads one first; without it NAME.catalog.yaml or
catalog.yaml beside NAME.sql, and --infra the same way: explain's rule), SHOW WORKERS / QUERIES / FUNCTIONS print,
and each query runs until its sources end. Results print as a table that grows
as windows close, or as --format csv, json (one array), jsonl (an object a
line) or parquet, as DuckDB's CLI prints them; --output FILE writes them
there instead (the format from its extension by default). A script of
several SELECTs writes one file per query, numbered before the extension
(out-1.csv, out-2.csv), as stderr says before anything runs.

By default the queries run on an embedded cluster: an in-process NATS server
(or --nats URL), a coordinator and one worker per worker of --infra (default:
one each on an edge, a hub and a cloud tier), each worker with its own NATS
connection, so a plan's data really crosses NATS between tiers. --processes
starts the workers as child processes instead. --local runs each query in this
process on one executor, without NATS between operators, on every core where it
pays; --parallelism and --memory-limit apply only there. Stderr names the mode and
the workers.

Streams FROM FILE are read in event-time order with epochs advanced by a
watermark: the largest event time seen minus --max-delay. Rows arriving after
their window closed are counted and dropped, never merged (the summary on
stderr counts them). Rows that do not fit the declared schema are reported with file and
row number; --on-error skip goes on without them, fail (the default) stops.
Ctrl-C stops the query cleanly: what was complete has been written, and run
exits 130. A source that has received nothing 3 seconds after it started
says on stderr what it waits on (a NATS subject, a file).

Every source batch is stamped with its ingest time and the sinks measure each
row's end-to-end latency (ingest to written): the summary on stderr gives
p50/p95/p99 and, for a query WITH (LATENCY <= x), the share of rows over it.
--stats FILE writes that summary as JSON when each query ends (one line per
query: rows_in, rows_out, dropped, latency_ms, slo_miss_rate, replans,
recoveries, elapsed_s). --replay feeds FROM FILE streams at their declared
RATE, as live streams; --source-max-delay bounds how long a NATS source waits
to fill a partial batch (a stream's source_max_delay_ms in the catalog wins).

On the cluster a worker that stops heartbeating is noticed within 2 s and its
queries resume on the workers left from the last epoch every sink committed:
file and JetStream streams replay (state is rebuilt by the replay) and the
results of each epoch are written once, so a killed worker changes no output
row; what core NATS streams published meanwhile is lost and counted. --replan
also cuts a query over to a new plan, at an epoch boundary, when one of its
relay links stalls its sender more than half the time (the link's receiver is
left out), or when a live number drifts from what the plan assumed: a stream
over --replan-drift (2) times its planned rate, a model call's time per item
or the rows into it per stream row past 2x either way, a tier link carrying
under half of what the plan needs while its senders stall. The planner then
runs again with the live numbers in place of the catalog's and the
infrastructure's, and the query is cut over only if the variant or worker
choice changes. --replan-data-aware (with --evidence) re-plans a
query WITH (ACCURACY >= x DATA AWARE) over a NATS or JetStream stream when
the stream's estimated class mix moves, to the variant that meets the target
on the new mix (SneakPeek); --policy NAME adds any registered policy
(docs/architecture.md). --stats and EXPLAIN ANALYZE list the plan
history and the recoveries.

--link-trace TIER_A:TIER_B=FILE (repeatable) throttles the real relay traffic
from the workers of one tier to those of another to a bandwidth trace: a CSV
with the header t_s,kbit_s, each row the bandwidth from t_s on, looping at its
end (examples/traces). The i-th of n sending workers plays it i/n of a period
ahead. A message arrives once its own bytes have crossed, so the latencies
include the transfer time.`,
		Example: `  tierflow run examples/streaming/query.sql
  tierflow run --output results.csv examples/streaming/query.sql
  tierflow run --on-error skip --max-delay 5s --format json examples/streaming/query.sql
  tierflow run --catalog examples/fashion/catalog.yaml --infra examples/fashion/infra.yaml --processes examples/fashion/cascade.sql
  tierflow run --local --parallelism 4 examples/streaming/query.sql
  tierflow run --replay --stats stats.json --catalog examples/vqa-live/catalog.yaml --infra examples/vqa-live/infra.yaml examples/vqa-live/query.sql`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRun(cmd.Context(), a, f, args[0])
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.output, "output", "", "write results to this file instead of the terminal")
	fl.StringVar(&f.onError, "on-error", "fail", "what to do with a row that does not fit its schema: skip or fail")
	fl.DurationVar(&f.maxDelay, "max-delay", 2*time.Second, "allowed out-of-orderness of event time (watermark delay)")
	fl.IntVar(&f.batch, "batch-size", 4096, "rows per source batch")
	fl.IntVar(&f.parallel, "parallelism", 0, "with --local: instances of each GROUP BY, rows exchanged by a hash of the group keys (0: a GROUP BY of few groups on every core, in two phases; 1: one instance)")
	fl.StringVar(&f.memLimit, "memory-limit", "", "with --local: most memory the state of a GROUP BY, or the table of a join of two tables, may take (e.g. 512MB or 2GiB); past it the state spills to disk, as an OVER's rows do by partition, and an ORDER BY sorts in runs on disk past half of it (default: no limit)")
	fl.BoolVar(&f.local, "local", false, "run in this process on one executor instead of an embedded cluster")
	fl.BoolVar(&f.processes, "processes", false, "start the cluster's workers as child processes instead of goroutines")
	fl.DurationVar(&f.heartbeat, "heartbeat", 500*time.Millisecond, "interval the cluster's workers heartbeat at; a worker silent for 3 of them (at least 1.5s) is dropped and its queries resume on the others")
	fl.DurationVar(&f.sourceMaxDelay, "source-max-delay", connectors.DefaultSourceMaxDelay, "longest a NATS or JetStream source waits to fill a partial batch")
	fl.BoolVar(&f.replay, "replay", false, "feed FROM FILE streams at their declared RATE, as live streams")
	fl.BoolVar(&f.noSLOPolicy, "no-slo-policy", false, "do not adapt LATENCY queries over a size-adaptive model zoo to the links' bandwidth (the Jellyfish policy; cluster only)")
	fl.BoolVar(&f.replan, "replan", false, "re-plan running queries off relay links that stall and when live numbers drift from the plan's (cluster only)")
	fl.Float64Var(&f.replanDrift, "replan-drift", control.DefaultDrift.Factor, "with --replan: re-plan when a rate or model time drifts past this factor of the plan's (0: only stalled links)")
	fl.StringArrayVar(&f.linkTraces, "link-trace", nil, "TIER_A:TIER_B=FILE: shape the relay links from tier A to tier B to a bandwidth trace (CSV t_s,kbit_s, looping; repeatable; embedded cluster only)")
	fl.BoolVar(&f.replanDataAware, "replan-data-aware", false, "with --evidence: re-plan DATA AWARE queries over NATS or JetStream streams when their estimated class mix moves (the SneakPeek policy; cluster only)")
	fl.StringArrayVar(&f.policies, "policy", nil, "add a registered policy by name (repeatable; runtime/policy: "+strings.Join(policy.Buildable(), ", ")+"; cluster only)")
	fl.StringVar(&f.sched, "sched", "", "the embedded workers' inference scheduling policy: naive (default), deepquery, maxacc-edf, lo-edf, grouped or sneakpeek (as tierflow worker --sched)")
	fl.StringVar(&f.evidence, "evidence", "", "with --sched sneakpeek: the Fashion-MNIST example directory whose training sample's nearest neighbours estimate each row's class")
	fl.StringVar(&f.stats, "stats", "", "write a JSON summary of each query (rows, drops, latency, SLO misses) to this file when it ends")
	return c
}

func runRun(ctx context.Context, a *app, f runFlags, path string) error {
	policy, err := sources.ParseOnError(f.onError)
	if err != nil {
		return badInput(err)
	}
	if _, err := parseBytes(f.memLimit); err != nil {
		return badInput(fmt.Errorf("--memory-limit: %w", err))
	}
	format, err := resultFormat(a.g.format, f.output)
	if err != nil {
		return badInput(err)
	}
	var src []byte
	if path == "-" {
		// The script from stdin; relative file paths are from the working
		// directory.
		src, err = readStdinScript(a)
		path = "<stdin>"
	} else {
		src, err = os.ReadFile(path)
	}
	if err != nil {
		return badInput(err)
	}
	// A script that does not parse (a README given by mistake) fails
	// before a cluster starts or an --output file is made.
	script, err := lang.Parse(path, string(src))
	if err != nil {
		return badInput(err)
	}
	if f.replay {
		// --replay paces by RATE: a stream without one is read at full
		// speed, which looked as if --replay did nothing.
		for _, st := range script.Statements {
			if cs, ok := st.(*lang.CreateStream); ok && cs.Source == lang.SourceFile && cs.Rate == nil {
				fmt.Fprintf(a.err, "-- %s: --replay: stream %s declares no RATE, so its file is read as fast as it can be (add RATE n PER SECOND)\n", cs.Pos, cs.Name)
			}
		}
	}
	if f.batch < 1 {
		return badInput(fmt.Errorf("--batch-size %d: want a positive number of rows", f.batch))
	}
	if f.heartbeat < 0 {
		return badInput(fmt.Errorf("--heartbeat %s: want a positive interval", f.heartbeat))
	}
	if f.local && f.processes {
		return badInput(fmt.Errorf("--local and --processes exclude each other"))
	}
	if f.local && f.stats != "" {
		return badInput(fmt.Errorf("--stats summarises a run on the cluster (its sinks measure the latency); drop --local"))
	}
	if f.replanDrift != 0 && f.replanDrift <= 1 {
		return badInput(fmt.Errorf("--replan-drift %g: want a factor above 1 (2: twice or half the plan's number), or 0 for stalled links only", f.replanDrift))
	}
	if f.local && f.replan {
		return badInput(fmt.Errorf("--replan re-plans queries on the cluster; drop --local"))
	}
	if _, err := sched.ByName(f.sched); err != nil {
		return badInput(fmt.Errorf("--sched: %w", err))
	}
	if f.local && (f.sched != "" || f.evidence != "") {
		return badInput(fmt.Errorf("--sched and --evidence set the cluster's workers' inference scheduler; drop --local"))
	}
	if f.sourceMaxDelay < 0 {
		return badInput(fmt.Errorf("--source-max-delay %s: want a duration >= 0", f.sourceMaxDelay))
	}
	inputs := inputsFor(a.g, path)
	if ctx == nil {
		ctx = context.Background()
	}
	// SIGTERM (a supervisor, `kill`) stops as Ctrl-C does: the cluster
	// closes, and with it every worker process.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	outputs, err := openOutputs(format, f.output, resultQueries(path, string(src)), a.out, a.err)
	if err != nil {
		return err
	}
	defer outputs.close()
	newOutput := outputs.newOutput
	base := filepath.Dir(path)
	if path == "<stdin>" {
		base = "."
	}
	if f.local {
		if pos, ok := analyzeStatement(path, string(src)); ok {
			return badInput(fmt.Errorf("%s: EXPLAIN ANALYZE holds a run on the cluster against its plan; run it without --local", pos))
		}
		err = runLocalScript(ctx, a, f, policy, path, string(src), base, inputs, format, newOutput)
	} else {
		err = runClusterScript(ctx, a, f, path, string(src), base, inputs, format, newOutput)
	}
	if ctx.Err() != nil {
		// Ctrl-C: the executor (or the cluster's stopped query) has written
		// every window that closed; whatever error the stop caused is not
		// the user's.
		fmt.Fprintln(a.err, "-- interrupted: results of closed windows were written")
		return silentExit{Code: exitInterrupted}
	}
	if errors.Is(err, planner.ErrInfeasible) {
		// Objectives no plan meets: the query is well formed, the
		// infrastructure cannot serve it (exit 1, at the objective).
		return err
	}
	var le *lang.Error
	var be bind.Errors
	var bi *bind.Error
	// A model call that cannot run (no such file, an argument that is not a
	// tensor) is the script's fault, like a name that does not bind, and so
	// is a file the script reads that is not there; on the cluster its kind
	// came back with it (deploy.ErrInput).
	var ie deploy.InputError
	if errors.Is(err, fs.ErrNotExist) || errors.As(err, &le) || errors.As(err, &be) || errors.As(err, &bi) ||
		errors.Is(err, exec.ErrUnsupported) || errors.Is(err, session.ErrUnsupported) || errors.Is(err, session.ErrInvalid) || errors.Is(err, inference.ErrModel) || errors.Is(err, deploy.ErrInput) ||
		errors.As(err, &ie) && ie.InputError() {
		return badInput(err)
	}
	return err
}

// runLocalScript runs the script in this process with operators/exec; NATS
// streams and sinks connect (to --nats or a server started when first
// needed) through runtime/connectors.
func runLocalScript(ctx context.Context, a *app, f runFlags, policy sources.OnError, path, src, base string, inputs scriptInputs, format string, newOutput func() (sinks.Writer, error)) error {
	if len(f.linkTraces) > 0 {
		return badInput(fmt.Errorf("--link-trace shapes relay links between workers: not with --local"))
	}
	cat, err := inputs.loadCatalog()
	if err != nil {
		return err
	}
	inf, err := inputs.loadInfra()
	if err != nil {
		return err
	}
	link := newNATSLink(a)
	defer link.close()
	nh := link.hooks(policy, f.batch, f.sourceMaxDelay)
	inputs.describe(a.err, builtinInfra)
	fmt.Fprintln(a.err, "-- local: one executor in this process")
	limit, _ := parseBytes(f.memLimit) // checked by runRun
	par := f.parallel
	if par == 0 {
		par = exec.AllCores
	}
	// Notices: a source that has received nothing for a while says what
	// it waits on (a NATS subject, a file) on stderr.
	eo := exec.Options{BaseDir: base, Stdout: a.out, Notices: a.err, OnError: policy, MaxDelay: f.maxDelay, BatchSize: f.batch, Parallelism: par, MemoryLimit: limit,
		Stream: nh.Stream, Sink: nh.Sink}
	if f.replay {
		eo.Pace = deploy.Replay
	}
	models := func(variants map[string]string) func(*logical.LateralModel, *arrow.Schema) (func() (dataflow.Operator, error), *arrow.Schema, error) {
		return inference.New(inference.Config{OrtLib: a.g.ortLib, BaseDir: base, Log: a.err, Variants: variants}).Lateral
	}
	eng := exec.Engine{Options: eo, Models: models}
	out := &session.ScriptOutput{Stdout: a.out, NewOutput: newOutput, Print: printListing(a.out, format), Log: a.err}
	// The session plans each query with the script's SET planner.* and
	// runs the variants its plan chose; declared tensor shapes meet the
	// model files when the query binds.
	s := session.NewSession(session.Config{Catalog: cat, Infra: inf, Engine: eng, Output: out, BaseDir: base, Files: exec.FilesIn, Stats: exec.StatsIn,
		CheckModelArgs: inference.New(inference.Config{OrtLib: a.g.ortLib, BaseDir: base}).CheckModelArgs, Plan: true})
	return s.Run(ctx, path, src)
}

// runClusterScript starts a local cluster (embedded, or with --processes
// child-process workers) on --infra or the default three tiers, and runs
// the script on it.
func runClusterScript(ctx context.Context, a *app, f runFlags, path, src, base string, inputs scriptInputs, format string, newOutput func() (sinks.Writer, error)) error {
	inf, err := inputs.loadInfra()
	if err != nil {
		return err
	}
	cat, err := inputs.loadCatalog()
	if err != nil {
		return err // its problems here, before a cluster starts
	}
	if err := checkBeforeStart(path, src, cat, base); err != nil {
		return err
	}
	catPath := ""
	if inputs.catalog != "" {
		var err error
		if catPath, err = filepath.Abs(inputs.catalog); err != nil {
			return badInput(err)
		}
	}
	inputs.describe(a.err, builtinInfra)
	absBase, err := filepath.Abs(base)
	if err != nil {
		return err
	}
	// The workers' logs (child processes' output is copied by goroutines of
	// os/exec) and this command's share stderr: one lock keeps lines whole.
	log := &lockedWriter{w: a.err}
	// Warnings and errors of the coordinator and embedded workers (a
	// worker lost, an operator's panic with its stack) go to stderr.
	// Every run is a deployment of its own: on a shared server (--nats) its
	// coordinator, workers and queries live in a namespace of their own, so
	// two runs never take each other's workers or results.
	opts := cluster.Options{Infra: inf, Catalog: catPath, NATS: a.g.nats, Auth: a.natsAuth(), ServerConfig: a.g.natsConfig, OrtLib: a.g.ortLib, ModelLog: log, Namespace: runNamespace(),
		Log: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	opts.Sched = f.sched
	opts.Heartbeat = f.heartbeat
	if opts.Evidence, err = loadEvidence(f.evidence); err != nil {
		return badInput(err)
	}
	if opts.Policies, err = runPolicies(f, opts.Evidence); err != nil {
		return badInput(err)
	}
	if f.evidence != "" {
		// Worker processes load the evidence themselves, from an absolute path.
		if opts.EvidenceDir, err = filepath.Abs(f.evidence); err != nil {
			return badInput(err)
		}
	}
	traces, err := parseLinkTraces(f.linkTraces, inf)
	if err != nil {
		return err
	}
	if len(traces) > 0 && f.processes {
		return badInput(fmt.Errorf("--link-trace shapes the embedded workers' relays: not with --processes"))
	}
	// --link-trace is a drill: it shapes the embedded workers' links
	// through the cluster's hooks.
	drill := cluster.Hooks{Shaper: linkShaper(traces, inf, time.Now())}
	mode := "embedded cluster"
	var c *cluster.Cluster
	if f.processes {
		mode = "cluster of worker processes"
		c, err = cluster.StartProcesses(ctx, cluster.ProcessOptions{Options: opts, Stderr: log})
	} else {
		c, err = cluster.StartEmbeddedHooked(ctx, opts, drill)
	}
	if err != nil {
		if errors.Is(err, cluster.ErrInfra) {
			return badInput(err)
		}
		return err
	}
	defer c.Close()
	var names []string
	for _, m := range inf.Machines() {
		names = append(names, cluster.WorkerName(m.Name)+" "+m.Tier)
	}
	fmt.Fprintf(log, "-- %s: %s (%s) on %s\n", mode, cli.Count(len(names), "worker"), strings.Join(names, ", "), redact(c.URL()))
	so := cluster.ScriptOptions{BaseDir: absBase, Catalog: catPath, CatalogBeside: inputs.catalogBeside, NewOutput: newOutput,
		Stdout: a.out, Log: log, OnError: f.onError, MaxDelay: f.maxDelay, BatchSize: f.batch, Analyze: f.analyze,
		SourceMaxDelay: f.sourceMaxDelay, Replay: f.replay, Print: printListing(a.out, format)}
	if f.stats != "" {
		sf, err := os.Create(f.stats)
		if err != nil {
			return badInput(err)
		}
		defer sf.Close()
		so.Stats = sf
	}
	return c.RunScript(ctx, path, src, so)
}

// printListing prints a script's SHOW and DESCRIBE as the REPL does, in the
// run's --format (a table for parquet, which is for results only).
func printListing(w io.Writer, format string) func(session.Listing) error {
	switch format {
	case "json", "jsonl", "csv":
	default:
		format = "table"
	}
	return func(l session.Listing) error { return repl.WriteListing(w, format, l) }
}

// analyzeStatement finds the first EXPLAIN ANALYZE of a script (a script that
// does not parse is left to the run to report).
func analyzeStatement(path, src string) (string, bool) {
	script, err := lang.Parse(path, src)
	if err != nil {
		return "", false
	}
	for _, st := range script.Statements {
		if e, ok := st.(*lang.Explain); ok && e.Analyze {
			return bind.Pos(e.Pos).String(), true
		}
	}
	return "", false
}

// lockedWriter serialises writes from several goroutines. Every worker that
// holds a part of a query builds its model operators and says so: a model
// line already printed for the current query is dropped.
type lockedWriter struct {
	mu     sync.Mutex
	w      io.Writer
	models map[string]bool
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	line := string(p)
	switch {
	case strings.HasPrefix(line, "-- model ") && strings.Count(line, "\n") == 1:
		if l.models[line] {
			return len(p), nil
		}
		if l.models == nil {
			l.models = map[string]bool{}
		}
		l.models[line] = true
	case strings.HasPrefix(line, "-- query "):
		clear(l.models)
	}
	return l.w.Write(p)
}

// runNamespace is a fresh subject namespace for one run ("run-" and 8 hex
// digits).
func runNamespace() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "run-" + hex.EncodeToString(b[:])
}

// runPolicies are the coordinator's policies for a run's flags: the
// defaults (less the Jellyfish policy with --no-slo-policy), --replan's
// (stalled links always, drift past --replan-drift unless 0),
// --replan-data-aware's and those --policy names.
func runPolicies(f runFlags, ev dataaware.Evidence) ([]policy.Policy, error) {
	var names []string
	for _, n := range policy.DefaultNames() {
		if n != policy.JellyfishName || !f.noSLOPolicy {
			names = append(names, n)
		}
	}
	if f.replan {
		names = append(names, policy.SlowLinkName)
		if f.replanDrift != 0 {
			names = append(names, policy.DriftName)
		}
	}
	if f.replanDataAware {
		names = append(names, policy.SneakPeekName)
	}
	names = append(names, f.policies...)
	return policy.Build(names, policy.Settings{DriftFactor: f.replanDrift, Evidence: ev})
}
