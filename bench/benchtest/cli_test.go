package benchtest_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/bench/benchtest"
	"github.com/tierflow/tierflow/internal/cli"
)

// The tests of bench/inference, bench/operators, bench/sneakpeek, bench/sql and bench/tpch/tpchcmd run
// the benchmarks' commands here, in one test binary, not in five more that
// each link the engine (make test's CPU is mostly compiling and linking test binaries;
// issue #27).

const exitBadInput = cli.ExitBadInput

// runner runs one benchmark's command as `tierflow bench` would.
func runner(cmd bench.Command) func(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return func(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
		return benchtest.Run(args, stdin, stdout, stderr, cmd)
	}
}

// captured runs a benchmark's command with no input, args from "bench",
// and returns its exit code and both streams.
func captured(cmd bench.Command) func(t *testing.T, args ...string) (code int, stdout, stderr string) {
	run := runner(cmd)
	return func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := run(args, strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}
}
