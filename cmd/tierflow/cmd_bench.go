package main

import (
	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/bench"
	benchinference "github.com/tierflow/tierflow/bench/inference"
	benchingest "github.com/tierflow/tierflow/bench/ingest"
	benchnexmark "github.com/tierflow/tierflow/bench/nexmark"
	benchoperators "github.com/tierflow/tierflow/bench/operators"
	benchplanner "github.com/tierflow/tierflow/bench/planner"
	benchrecovery "github.com/tierflow/tierflow/bench/recovery"
	benchrelay "github.com/tierflow/tierflow/bench/relay"
	benchshared "github.com/tierflow/tierflow/bench/shared"
	benchslo "github.com/tierflow/tierflow/bench/slo"
	benchsneakpeek "github.com/tierflow/tierflow/bench/sneakpeek"
	benchsql "github.com/tierflow/tierflow/bench/sql"
	benchtpch "github.com/tierflow/tierflow/bench/tpch/tpchcmd"
)

// benches are the `tierflow bench` commands, one line each: a benchmark is
// a package under bench/ whose Command builds its command (bench's package
// doc and docs/benchmarks.md, "Adding a benchmark").
var benches = []bench.Command{
	benchinference.Command,
	benchingest.Command,
	benchnexmark.Command,
	benchoperators.Command,
	benchplanner.Command,
	benchrecovery.Command,
	benchrelay.Command,
	benchrelay.PeerCommand, // hidden: bench relay's receiving end across processes
	benchshared.Command,
	benchslo.Command,
	benchsneakpeek.Command,
	benchsql.Command,
	benchtpch.Command,
}

// newBenchCmd is the parent of every `tierflow bench ...` command. Each
// benchmark returns its rows as a slice of structs with json tags and prints
// them with bench.Env.PrintRows, so every bench prints a table on a terminal
// and the same rows as JSON with --format json.
func newBenchCmd(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "bench",
		Short: "Run a benchmark and print its rows as a table (or JSON with --format json)",
		Long: `Benchmarks compare the engine against a baseline run in the same process and
report ratios, so numbers from different machines stay comparable.`,
		Example: "  tierflow bench planner --format json",
		// Without a benchmark: exit 2 naming them (usageIsBadInput).
	}
	env := &bench.Env{In: a.in, Out: a.out, Err: a.err, Globals: func() bench.Globals {
		return bench.Globals{Format: a.g.format, Infra: a.g.infra, NATS: a.g.nats, NATSConfig: a.g.natsConfig,
			ORTLib: a.g.ortLib, NATSAuth: a.natsAuth()}
	}}
	for _, b := range benches {
		c.AddCommand(b(env))
	}
	return c
}
