package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/session"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
)

func newSubmitCmd(a *app) *cobra.Command {
	var name, output, stats, namespace string
	var sourceMaxDelay, maxDelay time.Duration
	var replay bool
	var onError string
	var batchSize int
	c := &cobra.Command{
		Use:   "submit QUERY.sql",
		Short: "Submit a query to a tierflow cluster and stream its results back",
		Long: `submit sends a script (CREATE statements and one SELECT or INSERT) to the
coordinator at --nats URL, which places it on the registered workers and starts
it; the result rows stream back here as they are produced (--format table, csv or
json; --output FILE writes them to a file). Ctrl-C stops the query gracefully:
its sources end and what is in flight still arrives. Relative file paths in the
script are resolved against the script's directory.

SHOW WORKERS and SHOW QUERIES in the script print the coordinator's lists;
SET before the query applies to it (planner.* to the coordinator's plan,
exec.* to the sources), as in tierflow run; --on-error, --batch-size and
--max-delay are run's flags, with run's defaults, sent with the query. A
query under EXPLAIN ANALYZE runs paced at its plan's rates and prints the run
against the plan instead of its rows (--infra prices each link and worker;
without it the coordinator's totals are used).`,
		Example: `  tierflow submit --nats nats://127.0.0.1:4222 examples/streaming/query.sql
  tierflow submit --nats nats://127.0.0.1:4222 --format csv --output out.csv --name q1 query.sql
  echo 'SHOW WORKERS;' > w.sql && tierflow submit --nats nats://127.0.0.1:4222 w.sql`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.g.nats == "" {
				return badInput(errNeedNATS)
			}
			path, err := filepath.Abs(args[0])
			if err != nil {
				return badInput(err)
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return badInput(err)
			}
			script := deploy.Script{Filename: path, Source: string(src), BaseDir: filepath.Dir(path), SourceMaxDelay: sourceMaxDelay, Replay: replay, MaxDelay: maxDelay}
			if maxDelay < 0 {
				return badInput(fmt.Errorf("--max-delay %s: want a duration >= 0", maxDelay))
			}
			if sourceMaxDelay < 0 {
				return badInput(fmt.Errorf("--source-max-delay %s: want a duration >= 0", sourceMaxDelay))
			}
			onErr, err := sources.ParseOnError(onError)
			if err != nil {
				return badInput(err)
			}
			if batchSize < 1 {
				return badInput(fmt.Errorf("--batch-size %d: want a positive number of rows", batchSize))
			}
			script.BatchSize = batchSize
			inputs := inputsFor(a.g, args[0])
			if _, err := inputs.loadCatalog(); err != nil {
				return err
			}
			if inputs.catalog != "" {
				if script.Catalog, err = filepath.Abs(inputs.catalog); err != nil {
					return badInput(err)
				}
				script.CatalogBeside = inputs.catalogBeside
			}
			plan, err := planSubmission(path, string(src))
			if err != nil {
				return badInput(err)
			}
			// The script's SETs before its query, as `tierflow run` applies them.
			x := session.Exec{MaxDelay: script.MaxDelay, BatchSize: script.BatchSize, Replay: script.Replay, OnError: onErr}
			if err := x.Apply(plan.settings.Values()); err != nil {
				return badInput(err)
			}
			script.OnError = session.OnErrorName(x.OnError)
			script.MaxDelay, script.BatchSize, script.Replay, script.StateTTL = x.MaxDelay, x.BatchSize, x.Replay, x.StateTTL
			script.Planner = session.PlannerValues(plan.settings.Values())
			if plan.queries > 0 {
				script.Nth = 1
				if _, _, err := script.Bind(nil); err != nil {
					return badInput(err)
				}
			}
			var inf *infra.Infra
			if inputs.infra != "" {
				if inf, err = infra.LoadFile(inputs.infra); err != nil {
					return badInput(err)
				}
			}
			inputs.describe(a.err, "the cluster's workers")
			if err := checkNamespace(namespace); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			user, err := a.natsIdentity(a.g.nats)
			if err != nil {
				return err
			}
			// Waiting is visible: a lost server is said when it goes and
			// when it is back (the query goes on meanwhile), and once every
			// reconnect failed the submit fails saying so (Client.Submit).
			nc, err := a.connectNATS(a.g.nats, "tierflow-submit",
				nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
					if err != nil {
						fmt.Fprintf(a.err, "-- lost the NATS server (%v): reconnecting; the query goes on if it comes back\n", err)
					}
				}),
				nats.ReconnectHandler(func(nc *nats.Conn) {
					fmt.Fprintf(a.err, "-- reconnected to %s\n", redact(nc.ConnectedUrl()))
				}))
			if err != nil {
				return err
			}
			defer nc.Close()
			client := coordinator.NewClient(nc)
			client.User = user
			client.Namespace = namespace
			for _, what := range plan.shows {
				switch what {
				case "WORKERS":
					ws, err := client.Workers(ctx)
					if err != nil {
						return err
					}
					cluster.WriteWorkers(a.out, ws)
				case "QUERIES":
					qs, err := client.Queries(ctx)
					if err != nil {
						return err
					}
					cluster.WriteQueries(a.out, qs)
				}
			}
			if plan.queries == 0 {
				return nil
			}
			if plan.analyze != nil {
				def := cluster.AnalyzeOptions{}
				if a.g.format == "json" {
					def.Format = "json"
				}
				ao, err := cluster.ParseAnalyze(plan.analyze, def)
				if err != nil {
					return badInput(err)
				}
				rep, err := cluster.Analyze(ctx, client, inf, script, ao)
				if err != nil {
					return err
				}
				return cluster.WriteAnalysis(a.out, rep, ao.Format)
			}
			dst := a.out
			if output != "" {
				f, err := os.Create(output)
				if err != nil {
					return badInput(err)
				}
				defer f.Close()
				dst = f
			}
			format, err := resultFormat(a.g.format, output)
			if err != nil {
				return badInput(err)
			}
			w, err := resultWriter(format, dst)
			if err != nil {
				return badInput(err)
			}
			info, err := client.Submit(ctx, script, name, w)
			// A query that failed before a row came prints its error
			// alone, as run does: not an empty table's "(0 rows)" first.
			if t, ok := w.(interface{ Rows() int64 }); !ok || err == nil || t.Rows() > 0 {
				if cerr := w.Close(); err == nil {
					err = cerr
				}
			}
			if errors.Is(err, deploy.ErrInput) {
				return badInput(err)
			}
			if err != nil && ctx.Err() != nil {
				// Interrupted: exit 130 as shells expect, with why.
				fmt.Fprintf(a.err, "tierflow: %s\n", redact(err.Error()))
				return silentExit{Code: exitInterrupted}
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(a.err, cluster.Summary(info))
			if stats != "" {
				sf, err := os.Create(stats)
				if err != nil {
					return badInput(err)
				}
				defer sf.Close()
				if err := cluster.WriteStats(sf, info); err != nil {
					return err
				}
			}
			if ctx.Err() != nil {
				// Ctrl-C stopped the query; what it had written is out.
				return silentExit{Code: exitInterrupted}
			}
			return nil
		},
	}
	c.Flags().StringVar(&name, "name", "", "query name (default: a fresh q-XXXXXXXX)")
	c.Flags().StringVar(&namespace, "namespace", "", "subject namespace of the coordinator (default: the shared one)")
	c.Flags().StringVarP(&output, "output", "o", "", "write the results to this file instead of stdout")
	c.Flags().StringVar(&stats, "stats", "", "write a JSON summary of the query (rows, drops, latency, SLO misses) to this file when it ends")
	c.Flags().DurationVar(&sourceMaxDelay, "source-max-delay", 0, "longest a NATS or JetStream source waits to fill a partial batch (0: the workers' default, 5ms)")
	c.Flags().BoolVar(&replay, "replay", false, "feed FROM FILE streams at their declared RATE, as live streams")
	// run's default: without it the workers kept no out-of-orderness, and
	// submit dropped rows that run of the same script counted.
	c.Flags().DurationVar(&maxDelay, "max-delay", 2*time.Second, "allowed out-of-orderness of event time (watermark delay)")
	// run's source settings, with run's defaults and meaning.
	c.Flags().StringVar(&onError, "on-error", "fail", "what to do with a row that does not fit its schema: skip or fail")
	c.Flags().IntVar(&batchSize, "batch-size", 4096, "rows per source batch")
	return c
}

// submission is what a submitted script asks of the coordinator besides its
// definitions: listings, and at most one query (perhaps under EXPLAIN
// ANALYZE).
type submission struct {
	shows   []string
	queries int
	analyze *lang.Explain
	// settings are the script's SETs before its query (operators/session).
	settings *session.Settings
}

func planSubmission(path, src string) (submission, error) {
	sub := submission{settings: session.New()}
	script, err := lang.Parse(path, src)
	if err != nil {
		return sub, err
	}
	for _, st := range script.Statements {
		switch s := st.(type) {
		case *lang.Set:
			if sub.queries == 0 {
				if err := sub.settings.Set(s); err != nil {
					return sub, err
				}
			}
		case *lang.Describe:
			return sub, fmt.Errorf("%s: DESCRIBE lists this machine's catalog: use tierflow repl or run; submit shows WORKERS and QUERIES", bind.Pos(s.Pos))
		case *lang.Show:
			what := strings.ToUpper(string(s.What))
			if what != "WORKERS" && what != "QUERIES" {
				return sub, fmt.Errorf("%s: SHOW %s lists this machine's catalog; submit shows WORKERS and QUERIES, which the coordinator keeps", bind.Pos(s.Pos), what)
			}
			sub.shows = append(sub.shows, what)
		case *lang.Query, *lang.Insert:
			sub.queries++
		case *lang.Explain:
			if !s.Analyze {
				return sub, fmt.Errorf("%s: EXPLAIN plans here: use tierflow explain; submit runs EXPLAIN ANALYZE", bind.Pos(s.Pos))
			}
			sub.queries++
			sub.analyze = s
		}
	}
	if sub.queries > 1 {
		return sub, fmt.Errorf("%s: a submission runs one query; this script has %d", path, sub.queries)
	}
	if sub.queries == 0 && len(sub.shows) == 0 {
		return sub, fmt.Errorf("%s: nothing to submit (want a SELECT, INSERT, EXPLAIN ANALYZE, SHOW WORKERS or SHOW QUERIES)", path)
	}
	return sub, nil
}
