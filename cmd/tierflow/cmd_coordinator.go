package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/metrics"
	"github.com/tierflow/tierflow/runtime/security"
)

func newCoordinatorCmd(a *app) *cobra.Command {
	var metricsAddr, placement, namespace, authorityPath string
	var admins, dataRoots []string
	var limits deploy.Limits
	var bounds coordinator.Bounds
	var maxScript, maxStream, traceFile string
	var maxMemory string
	var heartbeat time.Duration
	c := &cobra.Command{
		Use:   "coordinator",
		Short: "Run the coordinator of a tierflow cluster (workers register, queries are submitted to it)",
		Long: `coordinator keeps the registered workers (SHOW WORKERS), places submitted
queries on the workers present, deploys each worker its operator instances,
tracks the queries (SHOW QUERIES) and stops them. It talks to workers and clients
only through NATS (--nats URL); without --nats it starts an embedded NATS server
and prints its URL. Queries are planned against the workers present, with the
prices, links and tier fan-outs of --infra; --catalog is the catalog scripts
start from (models and their profiles). --metrics :PORT serves Prometheus
metrics at /metrics.`,
		Example: `  tierflow coordinator --nats nats://127.0.0.1:4222
  tierflow coordinator --infra examples/vqa/infra.yaml --metrics :9100`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkNamespace(namespace); err != nil {
				return err
			}
			if traceFile != "" {
				stopTrace, err := startTrace(traceFile)
				if err != nil {
					return badInput(err)
				}
				defer stopTrace()
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var inf *infra.Infra
			if a.g.infra != "" {
				var err error
				if inf, err = infra.LoadFile(a.g.infra); err != nil {
					return badInput(err)
				}
			}
			roots, err := a.dataRoots(dataRoots, authorityPath)
			if err != nil {
				return err
			}
			if limits.MemoryBytes, err = parseBytes(maxMemory); err != nil {
				return badInput(fmt.Errorf("--max-query-memory: %w", err))
			}
			if limits.StreamBytes, err = parseBytes(maxStream); err != nil || limits.StreamBytes < 0 {
				return badInput(fmt.Errorf("--max-stream-bytes %q: want a size, 0 for no bound", maxStream))
			}
			if limits.StreamsPerUser < 0 {
				return badInput(fmt.Errorf("--max-streams-per-user %d: want 0 (no bound) or more", limits.StreamsPerUser))
			}
			script, err := parseBytes(maxScript)
			if err != nil || script <= 0 || script > natsserver.DefaultMaxPayload {
				return badInput(fmt.Errorf("--max-script-size %q: want a size from 1 byte to %d bytes (the server's largest message)", maxScript, natsserver.DefaultMaxPayload))
			}
			bounds.ScriptBytes = int(script)
			if bounds.SubmitsPerMinute < 0 || bounds.SubmitBurst < 1 {
				return badInput(fmt.Errorf("--max-submits-per-minute %g, --submit-burst %d: want 0 or more, 1 or more", bounds.SubmitsPerMinute, bounds.SubmitBurst))
			}
			var authority *security.Authority
			if authorityPath != "" {
				if authority, err = security.LoadAuthority(authorityPath); err != nil {
					return badInput(fmt.Errorf("--authority: %w", err))
				}
			}
			url := a.g.nats
			var srv *natsserver.Server
			if url == "" {
				if srv, err = a.startEmbeddedNATS(""); err != nil {
					return err
				}
				defer srv.Shutdown()
				url = srv.ClientURL()
			}
			nc, err := a.connectNATS(url, "tierflow-coordinator")
			if err != nil {
				return err
			}
			defer nc.Close()
			reg, msrv, err := startMetrics(metricsAddr)
			if err != nil {
				return badInput(err)
			}
			if msrv != nil {
				defer msrv.Close()
			}
			co, err := coordinator.Start(coordinator.Config{Conn: nc, Infra: inf, Catalog: a.g.catalog, Heartbeat: heartbeat, Metrics: reg,
				Log: slog.New(slog.NewTextHandler(a.err, nil)), Exec: cluster.ExecHooks(nc, a.g.ortLib, nil, 1), Placement: placement,
				CheckModelArgs: cluster.ModelArgChecks(a.g.ortLib), Namespace: namespace, Admins: admins, DataRoots: roots, Limits: limits,
				Authority: authority, Bounds: bounds})
			if err != nil {
				return err
			}
			defer co.Close()
			fmt.Fprintf(a.out, "coordinator on %s\n", redact(url))
			if msrv != nil {
				fmt.Fprintf(a.out, "metrics at %s\n", msrv.URL())
			}
			// SIGHUP reloads what nats-setup revoke changes: the embedded
			// server's configuration (the account's revocations) and the
			// authority file (the revoked user's queries stop).
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			for {
				select {
				case <-ctx.Done():
					return nil
				case <-hup:
					reload(a, srv, co, authorityPath)
				}
			}
		},
	}
	c.Flags().StringVar(&authorityPath, "authority", "", "the cluster's authority file (nats-setup's authority.json): each user's data subjects bound what its queries read and write, and every query part gets a NATS user of its owner's")
	c.Flags().StringVar(&namespace, "namespace", "", "subject namespace of this deployment (default: the shared one)")
	c.Flags().StringVar(&metricsAddr, "metrics", "", "serve Prometheus metrics on this address (e.g. :9100)")
	c.Flags().StringVar(&placement, "placement", coordinator.PlaceOptimizer, "how queries are placed: optimizer (the planner's physical plan; default rules when it cannot plan) or rules (sources at their tier, aggregates a tier up, the sink on top)")
	c.Flags().StringArrayVar(&dataRoots, "data-root", nil, "read the files submitted queries name (to plan them) only under this directory (repeatable), as workers do; on a secured cluster (credentials, --nats-config or --authority) without it, the coordinator reads none")
	c.Flags().DurationVar(&limits.RunTime, "max-query-time", 0, "fail a query still running after this long (0: no limit)")
	c.Flags().StringVar(&maxMemory, "max-query-memory", "", "fail a query that holds more Arrow memory than this on a worker, e.g. 512MiB (default: no limit)")
	c.Flags().IntVar(&limits.RowsInFlight, "max-rows-in-flight", 0, "rows a query may have in flight per link between workers (0: the relay's default window)")
	c.Flags().IntVar(&limits.QueriesPerUser, "max-queries-per-user", coordinator.QueriesPerUserByCapacity, "refuse a user's submission while they run this many queries (-1: one per core of the live workers together; 0: no limit)")
	c.Flags().StringVar(&maxStream, "max-stream-bytes", "128MiB", "with --authority: each JetStream stream made for a query holds at most this, its oldest messages discarded past it (0: no bound)")
	c.Flags().IntVar(&limits.StreamsPerUser, "max-streams-per-user", 8, "with --authority: refuse a query that needs a new JetStream stream while its user's queries made this many (0: no bound)")
	c.Flags().StringVar(&maxScript, "max-script-size", "1MiB", "refuse a submission larger than this")
	c.Flags().Float64Var(&bounds.SubmitsPerMinute, "max-submits-per-minute", 60, "refuse a user's submissions past this rate, after a burst of --submit-burst (0: no limit)")
	c.Flags().IntVar(&bounds.SubmitBurst, "submit-burst", 30, "submissions a user may make at once before --max-submits-per-minute applies")
	c.Flags().DurationVar(&bounds.KeepEndedFor, "keep-ended", time.Hour, "forget an ended query (SHOW QUERIES; its name is free again) this long after it ended; at most 100 are kept per user")
	c.Flags().StringArrayVar(&admins, "admin", nil, "a client identity (NATS user) that may stop any query; others stop only their own (repeatable)")
	c.Flags().DurationVar(&heartbeat, "heartbeat", time.Second, "interval workers heartbeat at; silent for 5 intervals, a worker is dropped")
	c.Flags().StringVar(&traceFile, "trace", "", "write an execution trace (go tool trace) of the coordinator to this file until it leaves")
	_ = c.Flags().MarkHidden("trace")
	return c
}

// reload applies a SIGHUP: the embedded server's configuration file and
// the authority file, read again. What fails is said and the old stays.
func reload(a *app, srv *natsserver.Server, co *coordinator.Coordinator, authorityPath string) {
	if srv != nil && a.g.natsConfig != "" {
		if err := srv.Reload(); err != nil {
			fmt.Fprintf(a.err, "tierflow: reload: %v\n", err)
		} else {
			fmt.Fprintf(a.out, "reloaded %s\n", a.g.natsConfig)
		}
	}
	if authorityPath != "" {
		au, err := security.LoadAuthority(authorityPath)
		if err != nil {
			fmt.Fprintf(a.err, "tierflow: reload --authority: %v\n", err)
			return
		}
		co.SetAuthority(au)
		fmt.Fprintf(a.out, "reloaded %s\n", authorityPath)
	}
}

// startMetrics serves a fresh registry on addr; an empty addr serves none.
func startMetrics(addr string) (*metrics.Registry, *metrics.Server, error) {
	if addr == "" {
		return nil, nil, nil
	}
	reg := metrics.New()
	srv, err := metrics.Serve(addr, reg)
	if err != nil {
		return nil, nil, fmt.Errorf("--metrics %s: %w", addr, err)
	}
	return reg, srv, nil
}

// needNATS is the error of a cluster command run without --nats.
var errNeedNATS = errors.New("--nats URL is required (the coordinator prints it)")

// parseBytes reads a size (dataflow.ParseBytes).
func parseBytes(s string) (int64, error) { return dataflow.ParseBytes(s) }
