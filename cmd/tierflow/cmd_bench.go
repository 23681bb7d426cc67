package main

import (
	"github.com/spf13/cobra"
)

// newBenchCmd is the parent of every `tierflow bench ...` command. Each benchmark
// lives in cmd_bench_<name>.go, returns its rows as a slice of structs with json
// tags, and prints them with printRows, so every bench prints a table on a terminal
// and the same rows as JSON with --format json.
func newBenchCmd(a *app, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:   "bench",
		Short: "Run a benchmark and print its rows as a table (or JSON with --format json)",
		Long: `Benchmarks compare the engine against a baseline run in the same process and
report ratios, so numbers from different machines stay comparable.`,
		Example: "  tierflow bench planner --format json",
		// Without a benchmark: exit 2 naming them (usageIsBadInput).
	}
	c.AddCommand(subs...)
	c.AddCommand(newBenchRelayPeerCmd(a))
	return c
}
