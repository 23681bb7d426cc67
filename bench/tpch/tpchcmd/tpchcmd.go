// Package tpchcmd is `tierflow bench tpch`: the command over bench/tpch's
// harness. It is a package of its own because bench/tpch is also built into
// the DuckDB peer (bench/sqlpeer, its own module), which needs none of the
// CLI.
package tpchcmd

import (
	"errors"
	"os/exec"

	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/bench/tpch"
	"github.com/tierflow/tierflow/internal/cli"
)

// Command is `tierflow bench tpch`: the harness is bench/tpch; with --peer
// duckdb it runs in the DuckDB peer program (its own Go module, as for bench
// sql), with --peer none in this process.
func Command(benv *bench.Env) *cobra.Command {
	f := tpch.Defaults()
	c := &cobra.Command{
		Use:   "tpch",
		Short: "The 22 TPC-H queries on generated Parquet files, answers and times against DuckDB",
		Long: `bench tpch generates TPC-H's eight tables at each --sf with tierflow's own
generator (dbgen's schema, value domains and distributions; the same files for
the same --seed) as Parquet files with the specification's types (DECIMAL(15,2),
DATE; --types double for DOUBLE and TIMESTAMP), cached under --data, then runs
the 22 queries in their standard text with the validation parameters on
tierflow's local engine and on DuckDB over the same files, --reps times each,
alternating the two, compares the answers and prints the median times and
their ratio (tierflow / DuckDB). It fails after the table when an answer
differs or a query fails.

The DuckDB side is the program tierflow-sqlpeer (bench/sqlpeer, built once
with make bench-sqlpeer; found as for bench sql). --peer none runs tierflow
alone, without it.`,
		Example: `  tierflow bench tpch --sf 1 --peer duckdb
  tierflow bench tpch --sf 0.01,0.1 --reps 1 --queries q1,q6,q13
  tierflow bench tpch --sf 0.1 --peer none --types double
  tierflow bench tpch --sf 1 --memory-limit 1GiB`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g := benv.G(); g.Format != "" {
				f.Format = g.Format
			}
			o, err := f.Options()
			if err != nil {
				return cli.BadInput(err)
			}
			if f.Peer == "none" {
				tf, err := f.Tierflow()
				if err != nil {
					return cli.BadInput(err)
				}
				return tpch.Bench(cmd.Context(), o, tf, nil, benv.Out, benv.Err)
			}
			bin, err := bench.FindSQLPeer(benv)
			if err != nil {
				return err
			}
			p := exec.CommandContext(cmd.Context(), bin, append([]string{"tpch"}, f.Args()...)...)
			p.Stdin, p.Stdout, p.Stderr = benv.In, benv.Out, benv.Err
			err = p.Run()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				// The peer printed its own error; keep its exit code.
				return cli.SilentExit{Code: ee.ExitCode()}
			}
			return err
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.SF, "sf", f.SF, tpch.Usage["sf"])
	fl.StringVar(&f.Types, "types", f.Types, tpch.Usage["types"])
	fl.Uint64Var(&f.Seed, "seed", f.Seed, tpch.Usage["seed"])
	fl.StringVar(&f.Data, "data", f.Data, tpch.Usage["data"])
	fl.IntVar(&f.Reps, "reps", f.Reps, tpch.Usage["reps"])
	fl.StringVar(&f.Queries, "queries", f.Queries, tpch.Usage["queries"])
	fl.IntVar(&f.Parallelism, "parallelism", f.Parallelism, tpch.Usage["parallelism"])
	fl.DurationVar(&f.Timeout, "timeout", f.Timeout, tpch.Usage["timeout"])
	fl.StringVar(&f.Peer, "peer", f.Peer, tpch.Usage["peer"])
	fl.StringVar(&f.MemoryLimit, "memory-limit", f.MemoryLimit, tpch.Usage["memory-limit"])
	return c
}
