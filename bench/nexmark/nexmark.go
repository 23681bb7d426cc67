package nexmark

import (
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
	Form string  `json:"form"`
}

// Command is `tierflow bench nexmark`.
func Command(env *bench.Env) *cobra.Command {
	var events, reps int
	var only, data string
	var seed int64
	c := &cobra.Command{
		Use:   "nexmark",
		Short: "Nexmark queries on generated events, events per second per query",
		Long: `bench nexmark generates Nexmark's events (1 person, 3 auctions and 46 bids in
every 50, with Nexmark's fields and id/time relations) as three CSV files under
--data, then runs each query on the local executor (the path of tierflow run
--local), its rows counted and dropped as Flink's blackhole sink drops them, and
prints the events of all three files over the best of --reps runs' time, and
each query's time over q0's (every bid passed through) in the same process. The
queries are nexmark-flink's text over the person, auction and bid streams; the
form column says where one differs. Their answers are checked against DuckDB
running the same queries over the same files as tables (TestNexmarkMatchesDuckDB
in bench/sqlpeer) and against answers derived from the events (go test
./bench/nexmark), which also runs each in several batchings and parallelisms.`,
		Example: `  tierflow bench nexmark --events 1000000
  tierflow bench nexmark --queries q18,q19 --reps 3 --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			qs := Queries
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
			prog := env.Progress(int64(len(qs)*reps), "queries")
			var rows []Row
			for _, q := range qs {
				prog.Describe(q.Name)
				var best Result
				for r := 0; r < reps; r++ {
					res, err := Run(cmd.Context(), dir, q, Options{})
					if err != nil {
						prog.Done()
						return err
					}
					if r == 0 || res.Elapsed < best.Elapsed {
						best = res
					}
					prog.Add(1)
				}
				form := q.Form
				if form == "" {
					form = "Flink's"
				}
				rows = append(rows, Row{Query: q.Name, Events: events, Rows: best.Written, Seconds: best.Elapsed.Seconds(),
					EventsPerSec: float64(events) / best.Elapsed.Seconds(), Form: form})
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
	return c
}
