// Command tierflow is the CLI and REPL of the tierflow engine.
//
// Every subcommand lives in its own file (cmd_<name>.go) and is registered in
// newRootCmd. Exit codes: 0 ok, 1 runtime failure, 2 bad input (query, config,
// flags).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/relay/natsserver"
)

// Exit codes shared by every subcommand.
const (
	exitOK          = cli.ExitOK
	exitFailure     = cli.ExitFailure
	exitBadInput    = cli.ExitBadInput
	exitInterrupted = cli.ExitInterrupted
	programVersion  = "0.1.0-dev"
)

// globals are the flags every subcommand understands.
type globals struct {
	catalog string // catalog YAML
	infra   string // infrastructure YAML
	nats    string // NATS URL; empty means the embedded server
	format  string // output format; each command says which it accepts
	ortLib  string // ONNX Runtime shared library path
	// auth is how NATS connections prove who they are (natsflags.go);
	// natsConfig configures an embedded server.
	auth       natsserver.Auth
	natsConfig string
}

// app bundles the streams and global flags that subcommands share, so tests can
// drive the CLI in-process.
type app struct {
	in       io.Reader
	out, err io.Writer
	g        globals
}

// badInputError marks an error as the user's input being wrong (exit 2);
// silentExit carries the code of a command that printed its own errors.
// Both are internal/cli's, which the benchmarks under bench/ share.
type (
	badInputError = cli.BadInputError
	silentExit    = cli.SilentExit
)

// badInput wraps err so that the CLI exits with code 2.
func badInput(err error) error { return cli.BadInput(err) }

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the CLI with args and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{in: stdin, out: stdout, err: stderr}
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var se silentExit
	if errors.As(err, &se) {
		return se.Code
	}
	if st := dataflow.PanicStack(err); st != nil {
		// A bug in an operator failed the query (not the process): its
		// stack is for the bug report, the error line below for the user.
		fmt.Fprintf(stderr, "%s\n", st)
	}
	fmt.Fprintf(stderr, "tierflow: %v\n", redact(err.Error()))
	var bi badInputError
	if errors.As(err, &bi) {
		return exitBadInput
	}
	return exitFailure
}

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "tierflow",
		Short: "Run ML workflows as streaming queries across edge, hub and cloud",
		Long: `tierflow runs declarative, SQL-like queries that mix relational operators with
ML model calls, plans them across tiered infrastructure (edge, hub, cloud) at the
lowest compute + network cost that meets the accuracy and throughput objectives,
and streams Arrow batches through the plan.`,
		Example: `  tierflow fmt examples/design/shelves.sql
  tierflow version`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error { return formatIsRead(c) }
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return badInput(fmt.Errorf("%w (see '%s --help')", err, c.CommandPath()))
	})
	pf := root.PersistentFlags()
	pf.StringVar(&a.g.catalog, "catalog", "", "catalog YAML file (models, streams, tables, sinks)")
	pf.StringVar(&a.g.infra, "infra", "", "infrastructure YAML file (tiers, workers, links)")
	pf.StringVar(&a.g.nats, "nats", "", "NATS server URL (default: an embedded in-process server)")
	pf.StringVar(&a.g.format, "format", "", "output format (each command lists the ones it accepts)")
	pf.StringVar(&a.g.ortLib, "ort-lib", "", "ONNX Runtime shared library (default: $TIERFLOW_ORT_LIB, then the setup cache)")
	addNATSFlags(pf, &a.g)

	// One line per subcommand; bench takes its benchmarks as children.
	root.AddCommand(
		newVersionCmd(a),
		newFmtCmd(a),
		newBenchCmd(a),
		newExplainCmd(a),
		newRunCmd(a),
		newImportCmd(a),
		newDevicesCmd(a),
		newReplCmd(a),
		newCoordinatorCmd(a),
		newWorkerCmd(a),
		newSubmitCmd(a),
		newPublishCmd(a),
		newProfileCmd(a),
		newNATSSetupCmd(a),
	)
	// The completion scripts write where the command was told to when
	// they are made: here, so that they go to a's streams.
	root.SetOut(a.out)
	root.SetErr(a.err)
	root.InitDefaultCompletionCmd()
	root.SetHelpCommand(newHelpCmd())
	usageIsBadInput(root)
	return root
}

// usageIsBadInput makes every way of calling a command wrongly exit 2, as a
// bad flag already does: a wrong number of arguments, an unknown command,
// a command group (bench, import, completion) without its subcommand. Cobra
// reports these as plain errors (exit 1), or prints the help and exits 0.
func usageIsBadInput(c *cobra.Command) {
	if args := c.Args; args != nil {
		c.Args = func(cmd *cobra.Command, a []string) error {
			if err := args(cmd, a); err != nil {
				// Cobra's "accepts 1 arg(s), received 0" does not say
				// which arguments: the usage line does.
				return badInput(fmt.Errorf("%w (usage: %s)", err, cmd.UseLine()))
			}
			return nil
		}
	}
	if c.HasSubCommands() && !c.Runnable() {
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !cmd.HasParent() {
				return cmd.Help() // plain `tierflow`
			}
			var names []string
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() {
					names = append(names, sub.Name())
				}
			}
			want := strings.Join(names, ", ")
			if len(args) == 0 {
				return badInput(fmt.Errorf("missing subcommand for %q: want one of %s", cmd.CommandPath(), want))
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			// Cobra sets the distance for typos ("rn", "explian") only on
			// the path this RunE replaces; without it only prefixes match.
			if cmd.SuggestionsMinimumDistance <= 0 {
				cmd.SuggestionsMinimumDistance = 2
			}
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf(" (did you mean %q?)", s[0])
			}
			return badInput(fmt.Errorf("%s: want one of %s", msg, want))
		}
	}
	for _, sub := range c.Commands() {
		usageIsBadInput(sub)
	}
}

// newHelpCmd is `tierflow help [COMMAND...]`. Cobra's printed the whole
// usage and exited 0 for a topic it did not know ("help runn"): here that
// is bad input with a "did you mean", as "tierflow runn" is.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long: `Help provides help for any command in the application.
Simply type tierflow help [path to command] for full details.`,
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err == nil && len(rest) == 0 {
				return target.Help()
			}
			if target == nil {
				target = c.Root()
			}
			topic := strings.Join(args, " ")
			if len(rest) > 0 {
				topic = rest[0]
			}
			msg := fmt.Sprintf("unknown help topic %q for %q", topic, target.CommandPath())
			if target.SuggestionsMinimumDistance <= 0 {
				target.SuggestionsMinimumDistance = 2
			}
			if s := target.SuggestionsFor(topic); len(s) > 0 {
				msg += fmt.Sprintf(" (did you mean %q?)", s[0])
			}
			return badInput(errors.New(msg))
		},
	}
}

// formatReaders are the commands (with their subcommands) that read the
// global --format; the rest print one form.
var formatReaders = []string{"bench", "devices", "explain", "profile", "publish", "repl", "run", "submit"}

// formatIsRead refuses --format on a command that would ignore it
// ("tierflow version --format json" printed text and exited 0).
func formatIsRead(c *cobra.Command) error {
	f := c.Flags().Lookup("format")
	if f == nil || !f.Changed {
		return nil
	}
	top := c
	for top.HasParent() && top.Parent().HasParent() {
		top = top.Parent()
	}
	for _, name := range formatReaders {
		if top.Name() == name {
			return nil
		}
	}
	return badInput(fmt.Errorf("--format %s: %q has one output form (--format is for %s)", f.Value, c.CommandPath(), strings.Join(formatReaders, ", ")))
}

// readStdinScript reads the script from standard input; on a terminal it
// first says so: `tierflow fmt` without a file waited in silence.
func readStdinScript(a *app) ([]byte, error) {
	if cli.IsTerminal(a.in) {
		fmt.Fprintln(a.err, "-- reading the script from standard input; end it with Ctrl-D")
	}
	return io.ReadAll(a.in)
}
