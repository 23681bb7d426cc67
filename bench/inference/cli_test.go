package inference

import (
	"io"

	"github.com/tierflow/tierflow/bench/benchtest"
	"github.com/tierflow/tierflow/internal/cli"
)

// The exit code the tests expect, as the CLI's.
const exitBadInput = cli.ExitBadInput

// run runs args ("bench", "inference", flags...) as the CLI would.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return benchtest.Run(args, stdin, stdout, stderr, Command)
}
