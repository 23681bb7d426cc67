package tpchcmd_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/bench/benchtest"
	"github.com/tierflow/tierflow/bench/tpch/tpchcmd"
	"github.com/tierflow/tierflow/internal/cli"
)

// The exit codes the tests expect, as the CLI's.
const (
	exitOK       = cli.ExitOK
	exitBadInput = cli.ExitBadInput
)

// run runs args ("bench", "tpch", flags...) as the CLI would.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return benchtest.Run(args, stdin, stdout, stderr, tpchcmd.Command)
}

// runCLI runs args with stdin and returns the exit code and both streams.
func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}
