// Package bench is the ground every benchmark of `tierflow bench` stands on.
// Each benchmark is a package under bench/ (bench/planner, bench/relay,
// bench/slo, ...) whose Command builds its cobra command from an Env; the
// CLI (cmd/tierflow, cmd_bench.go) lists those Commands, one line each, and
// hands them its streams and global flags. Nothing but cmd/tierflow imports
// a bench package, so no harness, baseline or bench hook is linked into the
// product's packages; a micro-benchmark of one package stays in that
// package's *_test.go.
//
// Adding a benchmark (docs/benchmarks.md, "Adding a benchmark"):
//
//  1. a package bench/NAME with `func Command(env *bench.Env) *cobra.Command`
//     whose rows are a slice of structs with json tags, printed with
//     env.PrintRows (a table, or JSON with --format json);
//  2. one line in cmd/tierflow/cmd_bench.go's benches.
//
// bench/sqlpeer is DuckDB's side of `bench sql`: its own Go module, so that
// DuckDB never enters tierflow's build.
package bench

import (
	"io"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/relay/natsserver"
)

// Command builds one benchmark's `tierflow bench NAME` command.
type Command func(env *Env) *cobra.Command

// Env is what the CLI hands a benchmark: its streams, and the global flags
// once they are parsed (Globals, read when the command runs).
type Env struct {
	In       io.Reader
	Out, Err io.Writer
	// Globals returns the CLI's global flags as parsed. Call it in the
	// command's RunE: when Command runs, nothing is parsed yet.
	Globals func() Globals
}

// Globals are the CLI's global flags a benchmark may read.
type Globals struct {
	Format     string // --format: "" or "table", "json"
	Infra      string // --infra
	NATS       string // --nats; "" starts an embedded server
	NATSConfig string // --nats-config
	ORTLib     string // --ort-lib
	// NATSAuth is the connection's credentials, from the --nats-* and
	// --tls-* flags and the environment.
	NATSAuth natsserver.Auth
}

// G is env.Globals(), or the zero Globals when the CLI gave none.
func (env *Env) G() Globals {
	if env.Globals == nil {
		return Globals{}
	}
	return env.Globals()
}

// PrintRows prints rows (a slice of structs with json tags) on Out as a
// table, or as a JSON array with --format json.
func (env *Env) PrintRows(rows any) error {
	return cli.PrintRows(env.Out, env.G().Format, rows)
}

// Progress reports long work on Err: a bar on a terminal, a plain line now
// and then otherwise.
func (env *Env) Progress(total int64, what string) *cli.Progress {
	return cli.NewProgress(env.Err, total, what)
}

// Discard is a result writer that drops the rows: for a benchmark whose
// measure is not the rows themselves.
type Discard struct{}

func (Discard) Write(arrow.Record) error { return nil }
func (Discard) Close() error             { return nil }
