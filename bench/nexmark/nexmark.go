package nexmark

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/internal/cli"
)

// Row is one query's measurement.
type Row struct {
	Query        string  `json:"query"`
	Events       int     `json:"events"`
	Rows         int64   `json:"rows_out"`
	Seconds      float64 `json:"seconds"`
	EventsPerSec float64 `json:"events_per_sec"`
	// VsQ0 is the query's time over q0's (every bid passed through) in
	// the same process: what the query costs beyond reading the bids, and
	// a number a loaded machine moves less than events/s.
	VsQ0 float64 `json:"vs_pass_through,omitempty"`
	// ClusterEventsPerSec is the same events over the best of the
	// query's runs on the embedded cluster (--cluster-workers; 0 when not
	// run), ClusterRows its rows and ClusterVsLocal its events/s over the
	// local executor's.
	ClusterEventsPerSec float64 `json:"cluster_events_per_sec,omitempty"`
	ClusterRows         int64   `json:"cluster_rows_out,omitempty"`
	ClusterVsLocal      float64 `json:"cluster_vs_local,omitempty"`
	Form                string  `json:"form"`
}

// Command is `tierflow bench nexmark`.
func Command(env *bench.Env) *cobra.Command {
	var events, reps, partitions, clusterWorkers int
	var only, data, profile string
	var seed int64
	var processes []int
	var embedded bool
	c := &cobra.Command{
		Use:   "nexmark",
		Short: "Nexmark queries on generated events, events per second per query",
		Long: `bench nexmark generates Nexmark's events (1 person, 3 auctions and 46 bids in
every 50, with Nexmark's fields and id/time relations) as three CSV files under
--data, then runs each query on the local executor (the path of tierflow run
--local), its rows counted and dropped as Flink's blackhole sink drops them, and
prints the events of all three files over the best of --reps runs' time, and
each query's time over q0's (every bid passed through) in the same process.
Each query runs as well on an embedded cluster of --cluster-workers workers
(goroutines of this process, one tier, each stream split into a partition per
worker, batches crossing the cluster's NATS server between operators placed
on different workers: the path of tierflow run on a cluster), the local and
the cluster runs taking turns (the local one first in odd repetitions, the
cluster's in even ones); cluster events/s is over its best run, and
cluster vs local its events/s over the local executor's (--cluster-workers 0:
local only). The
queries are nexmark-flink's text over the person, auction and bid streams; the
form column says where one differs. Their answers are checked against DuckDB
running the same queries over the same files as tables (TestNexmarkMatchesDuckDB
in bench/sqlpeer) and against answers derived from the events (go test
./bench/nexmark), which also runs each in several batchings and parallelisms.

--processes N,M,... runs the keyed queries (default q5-bids, q7-max, q-bidder:
aggregations by auction or bidder) on a cluster of N worker processes, then M,
... (--embedded: workers in this process), the sizes taking turns in every
repetition. Each stream is split into --partitions files (default: the least
common multiple of the sizes), a partition each, read by a source instance of
its own and spread over the workers; the keyed aggregation runs as one
instance per partition, its rows exchanged between the workers by a hash of
the key, and so does a join of two streams (--queries q4,q5,q7), each input
by its own join columns. Each worker process runs on its worker type's share
of the cores (1 vCPU: GOMAXPROCS=1), as a machine of that size would, and this
process (NATS server, coordinator, sink) on the cores they leave, at least one.
Each size's speedup is the median over --reps of its events/s over the first
size's in the run next to it, and same_answer says every run gave the first's
rows; worker_cpu_s_per_m_events and bench_cpu_s_per_m_events are the worker
processes' and this process's CPU seconds (user and system) per million
events, medians over the runs; relay_mb_per_m_events and relay_msgs_per_m_events
what the workers' relay connections sent this process's NATS server (the
batches, progress and acks crossing between workers), other_mb_per_m_events
every other connection's. --cpuprofile DIR has every worker process write a CPU
profile of its whole life (all runs of all queries) to DIR/N-workers/NAME.pprof,
and this process (NATS server, coordinator, sink) one per run to
DIR/N-workers/bench-QUERY-rN.pprof (go tool pprof reads them).`,
		Example: `  tierflow bench nexmark --events 1000000
  tierflow bench nexmark --queries q18,q19 --reps 3 --format json
  tierflow bench nexmark --processes 1,2 --reps 5
  tierflow bench nexmark --processes 1,2 --queries q4,q5,q7 --reps 5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			qs := Queries
			if len(processes) > 0 {
				qs = Keyed
			}
			if only != "" {
				qs = nil
				for _, n := range strings.Split(only, ",") {
					q, ok := Lookup(strings.TrimSpace(n))
					if !ok {
						return cli.BadInput(fmt.Errorf("--queries: no query %q (want some of %s)", n, strings.Join(Names(), ", ")))
					}
					qs = append(qs, q)
				}
			}
			if events < 50 || reps < 1 {
				return cli.BadInput(fmt.Errorf("--events must be at least 50 and --reps at least 1"))
			}
			dir := filepath.Join(data, fmt.Sprintf("%d-%d", events, seed))
			if _, err := os.Stat(filepath.Join(dir, "side_input.csv")); err != nil { // written last
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return err
				}
				fmt.Fprintf(env.Err, "-- generating %d events in %s\n", events, dir)
				if _, err := Generate(dir, Config{Events: events, Seed: seed}); err != nil {
					return err
				}
			}
			if len(processes) > 0 {
				return scaleCommand(cmd.Context(), env, dir, events, qs, processes, partitions, reps, embedded, profile)
			}
			if clusterWorkers < 0 {
				return cli.BadInput(fmt.Errorf("--cluster-workers %d: want 0 (local only) or more", clusterWorkers))
			}
			var c *Cluster
			var parts string
			runs := 1
			if clusterWorkers > 0 {
				var err error
				if parts, err = Partition(dir, clusterWorkers); err != nil {
					return err
				}
				if c, err = StartCluster(cmd.Context(), ClusterOptions{Workers: clusterWorkers, Log: env.Err}); err != nil {
					return err
				}
				defer c.Close()
				runs = 2
			}
			prog := env.Progress(int64(len(qs)*reps*runs), "runs")
			var rows []Row
			for _, q := range qs {
				var best, bestCluster Result
				for r := 0; r < reps; r++ {
					// The local run first in even repetitions, the
					// cluster's in odd ones: neither always finds the
					// machine as the other left it.
					for k := range runs {
						onCluster := k == 1 == (r%2 == 0)
						if runs == 1 {
							onCluster = false
						}
						var res Result
						var err error
						if onCluster {
							prog.Describe(q.Name + " on " + cli.Count(clusterWorkers, "worker"))
							res, err = c.Run(cmd.Context(), parts, q, Options{})
						} else {
							prog.Describe(q.Name)
							res, err = Run(cmd.Context(), dir, q, Options{})
						}
						if err != nil {
							prog.Done()
							return err
						}
						at := &best
						if onCluster {
							at = &bestCluster
						}
						if at.Elapsed == 0 || res.Elapsed < at.Elapsed {
							*at = res
						}
						prog.Add(1)
					}
				}
				form := q.Form
				if form == "" {
					form = "Flink's"
				}
				row := Row{Query: q.Name, Events: events, Rows: best.Written, Seconds: best.Elapsed.Seconds(),
					EventsPerSec: float64(events) / best.Elapsed.Seconds(), Form: form}
				if c != nil {
					row.ClusterEventsPerSec = float64(events) / bestCluster.Elapsed.Seconds()
					row.ClusterRows = bestCluster.Written
					row.ClusterVsLocal = row.ClusterEventsPerSec / row.EventsPerSec
				}
				rows = append(rows, row)
			}
			prog.Done()
			for i := range rows {
				for _, b := range rows {
					if b.Query == "q0" && b.Seconds > 0 {
						rows[i].VsQ0 = rows[i].Seconds / b.Seconds
					}
				}
			}
			return env.PrintRows(rows)
		},
	}
	fl := c.Flags()
	fl.IntVar(&events, "events", 1_000_000, "events to generate (persons, auctions and bids together)")
	fl.IntVar(&reps, "reps", 1, "runs of each query; the fastest is reported")
	fl.StringVar(&only, "queries", "", "comma-separated names of the queries to run (default all: "+strings.Join(Names(), ",")+")")
	fl.StringVar(&data, "data", filepath.Join(".cache", "nexmark"), "directory for the generated events, one folder per size and seed, reused")
	fl.Int64Var(&seed, "seed", 1, "the generator's seed")
	fl.IntSliceVar(&processes, "processes", nil, "run the keyed queries on clusters of these numbers of worker processes (e.g. 1,2) and print each size's speedup over the first")
	fl.IntVar(&clusterWorkers, "cluster-workers", 1, "also run each query on an embedded cluster of this many workers (0: local only)")
	fl.IntVar(&partitions, "partitions", 0, "with --processes: files each stream is split into, one partition each (default: the least common multiple of the sizes)")
	fl.BoolVar(&embedded, "embedded", false, "with --processes: the workers run in this process instead of as child processes")
	fl.StringVar(&profile, "cpuprofile", "", "with --processes: every worker process writes a CPU profile to this directory (N-workers/NAME.pprof), and this process one per run (N-workers/bench-QUERY-rN.pprof)")
	return c
}

// scaleCommand is `bench nexmark --processes`.
func scaleCommand(ctx context.Context, env *bench.Env, dir string, events int, qs []Query, sizes []int, partitions, reps int, embedded bool, profile string) error {
	for _, n := range sizes {
		if n < 1 {
			return cli.BadInput(fmt.Errorf("--processes: %d workers (want 1 or more each)", n))
		}
	}
	if partitions == 0 {
		partitions = lcm(sizes)
	}
	if partitions < 1 {
		return cli.BadInput(fmt.Errorf("--partitions %d: want 1 or more", partitions))
	}
	fmt.Fprintf(env.Err, "-- splitting the events into %d partitions\n", partitions)
	parts, err := Partition(dir, partitions)
	if err != nil {
		return err
	}
	prog := env.Progress(int64(len(qs)*len(sizes)*reps), "runs")
	rows, err := Scale(ctx, parts, partitions, qs, ScaleOptions{Events: events, Workers: sizes, Reps: reps,
		Processes: !embedded, Log: env.Err, Progress: prog, ProfileDir: profile})
	prog.Done()
	if err != nil {
		return err
	}
	return env.PrintRows(rows)
}
