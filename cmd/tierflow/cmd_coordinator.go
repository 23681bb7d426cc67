package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/metrics"
)

func newCoordinatorCmd(a *app) *cobra.Command {
	var metricsAddr, placement, namespace string
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
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var inf *infra.Infra
			if a.g.infra != "" {
				var err error
				if inf, err = infra.LoadFile(a.g.infra); err != nil {
					return badInput(err)
				}
			}
			url := a.g.nats
			if url == "" {
				srv, err := natsserver.Start(natsserver.Options{})
				if err != nil {
					return err
				}
				defer srv.Shutdown()
				url = srv.ClientURL()
			}
			nc, err := natsserver.Connect(url, nats.Name("tierflow-coordinator"))
			if err != nil {
				return fmt.Errorf("connect to %s: %w", url, err)
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
				CheckModelArgs: cluster.ModelArgChecks(a.g.ortLib), Namespace: namespace})
			if err != nil {
				return err
			}
			defer co.Close()
			fmt.Fprintf(a.out, "coordinator on %s\n", url)
			if msrv != nil {
				fmt.Fprintf(a.out, "metrics at %s\n", msrv.URL())
			}
			<-ctx.Done()
			return nil
		},
	}
	c.Flags().StringVar(&namespace, "namespace", "", "subject namespace of this deployment (default: the shared one)")
	c.Flags().StringVar(&metricsAddr, "metrics", "", "serve Prometheus metrics on this address (e.g. :9100)")
	c.Flags().StringVar(&placement, "placement", coordinator.PlaceOptimizer, "how queries are placed: optimizer (the planner's physical plan; default rules when it cannot plan) or rules (sources at their tier, aggregates a tier up, the sink on top)")
	c.Flags().DurationVar(&heartbeat, "heartbeat", time.Second, "interval workers heartbeat at; silent for 5 intervals, a worker is dropped")
	return c
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
