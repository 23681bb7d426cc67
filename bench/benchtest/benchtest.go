// Package benchtest runs a benchmark's command as `tierflow bench NAME`
// runs it, for the benchmark's own tests: under a root with the CLI's
// global flags a benchmark reads (--format, --infra, --nats, --nats-config,
// --ort-lib), with bad flags, arguments and subcommands exiting 2 and an
// error printed on stderr as the CLI prints it. Tests that need the real
// CLI (child tierflow processes) live in cmd/tierflow.
package benchtest

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/internal/cli"
)

// Run runs args ("bench", NAME, flags...) against the commands of cmds and
// returns the exit code the CLI would.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer, cmds ...bench.Command) int {
	var g bench.Globals
	root := &cobra.Command{Use: "tierflow", SilenceUsage: true, SilenceErrors: true}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return cli.BadInput(err) })
	pf := root.PersistentFlags()
	pf.StringVar(&g.Format, "format", "", "output format")
	pf.StringVar(&g.Infra, "infra", "", "infrastructure YAML file")
	pf.StringVar(&g.NATS, "nats", "", "NATS server URL")
	pf.StringVar(&g.NATSConfig, "nats-config", "", "nats-server configuration file")
	pf.StringVar(&g.ORTLib, "ort-lib", "", "ONNX Runtime shared library")
	env := &bench.Env{In: stdin, Out: stdout, Err: stderr, Globals: func() bench.Globals { return g }}
	group := &cobra.Command{Use: "bench"}
	for _, cmd := range cmds {
		group.AddCommand(cmd(env))
	}
	root.AddCommand(group)
	badUsage(root)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if _, silent := err.(cli.SilentExit); err != nil && !silent {
		fmt.Fprintf(stderr, "tierflow: %v\n", err)
	}
	return cli.ExitCode(err)
}

// badUsage makes a wrong number of arguments bad input (exit 2), as the
// CLI does.
func badUsage(c *cobra.Command) {
	if args := c.Args; args != nil {
		c.Args = func(cmd *cobra.Command, a []string) error { return cli.BadInput(args(cmd, a)) }
	}
	for _, sub := range c.Commands() {
		badUsage(sub)
	}
}
