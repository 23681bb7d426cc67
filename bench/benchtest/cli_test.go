package benchtest_test

import (
	"io"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/bench/benchtest"
	"github.com/tierflow/tierflow/internal/cli"
)

// The tests of bench/inference, bench/sneakpeek, bench/sql and bench/tpch/tpchcmd run
// the benchmarks' commands here, in one test binary, not in four more that
// each link the engine (make test's CPU is mostly compiling and linking test binaries;
// issue #27).

const exitBadInput = cli.ExitBadInput

// runner runs one benchmark's command as `tierflow bench` would.
func runner(cmd bench.Command) func(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return func(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
		return benchtest.Run(args, stdin, stdout, stderr, cmd)
	}
}
