package sql

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/internal/cli"
)

// newBenchSQLCmd runs tierflow's relational engine side by side with DuckDB
// by executing the peer benchmark with the same flags.
func Command(benv *bench.Env) *cobra.Command {
	var peer, rows, data, only string
	var reps, parallelism int
	c := &cobra.Command{
		Use:   "sql",
		Short: "Relational queries on generated Parquet and CSV, timed against DuckDB",
		Long: `bench sql generates a deterministic lineitem/orders/events data set as Parquet and
CSV (cached under --data per size), runs a fixed set of queries - filter and
aggregate, group-by over many groups, hash join, ORDER BY ... LIMIT, a TUMBLE
window aggregation (DuckDB: time_bucket) and the TPC-H queries tierflow's SQL
expresses (Q1, Q6, Q12) - on tierflow's local engine and on DuckDB, both in one
process and on every core, checks that both give the same answers and prints the
median time of --reps runs of each and their ratio (tierflow / DuckDB).

The DuckDB side is the program tierflow-sqlpeer, built from its own Go module
(bench/sqlpeer) so that DuckDB does not enter tierflow's build; it is looked
for in $TIERFLOW_SQLPEER, next to this binary and on PATH, and built next to
this binary from the source tree when it is missing (make bench-sqlpeer).`,
		Example: `  tierflow bench sql --peer duckdb
  tierflow bench sql --rows 1M,10M --reps 5 --format json
  tierflow bench sql --queries topn,join --rows 10M`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if peer != "duckdb" {
				return cli.BadInput(fmt.Errorf("--peer %q: the only peer is duckdb", peer))
			}
			bin, err := bench.FindSQLPeer(benv)
			if err != nil {
				return err
			}
			format := benv.G().Format
			if format == "" {
				format = "table"
			}
			args := []string{"--peer", peer, "--rows", rows, "--reps", strconv.Itoa(reps), "--data", data,
				"--parallelism", strconv.Itoa(parallelism), "--format", format}
			if only != "" {
				args = append(args, "--queries", only)
			}
			p := exec.CommandContext(cmd.Context(), bin, args...)
			p.Stdin, p.Stdout, p.Stderr = benv.In, benv.Out, benv.Err
			err = p.Run()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				// The peer printed its own error; keep its exit code (2 for
				// bad flags, 1 for a failure or answers that differ).
				return cli.SilentExit{Code: ee.ExitCode()}
			}
			return err
		},
	}
	fl := c.Flags()
	fl.StringVar(&peer, "peer", "duckdb", "the engine to compare with")
	fl.StringVar(&rows, "rows", "1M", "data sizes in lineitem rows, comma-separated, with k/M suffixes (e.g. 1M,10M,50M)")
	fl.IntVar(&reps, "reps", 3, "runs of each query on each engine; the median is reported")
	fl.StringVar(&data, "data", filepath.Join(".cache", "sqlbench"), "directory for the generated data, one folder per size, reused")
	fl.StringVar(&only, "queries", "", "comma-separated names of the queries to run (default all)")
	fl.IntVar(&parallelism, "parallelism", 0, "tierflow's --parallelism (0: its default)")
	return c
}
