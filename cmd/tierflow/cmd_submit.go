package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
)

func newSubmitCmd(a *app) *cobra.Command {
	var name, output string
	c := &cobra.Command{
		Use:   "submit QUERY.sql",
		Short: "Submit a query to a tierflow cluster and stream its results back",
		Long: `submit sends a script (CREATE statements and one SELECT or INSERT) to the
coordinator at --nats URL, which places it on the registered workers and starts
it; the result rows stream back here as they are produced (--format table, csv or
json; --output FILE writes them to a file). Ctrl-C stops the query gracefully:
its sources end and what is in flight still arrives. Relative file paths in the
script are resolved against the script's directory.`,
		Example: `  tierflow submit --nats nats://127.0.0.1:4222 examples/streaming/query.sql
  tierflow submit --nats nats://127.0.0.1:4222 --format csv --output out.csv --name q1 query.sql`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.g.nats == "" {
				return badInput(errNeedNATS)
			}
			path, err := filepath.Abs(args[0])
			if err != nil {
				return badInput(err)
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return badInput(err)
			}
			script := deploy.Script{Filename: path, Source: string(src), BaseDir: filepath.Dir(path)}
			if a.g.catalog != "" {
				if script.Catalog, err = filepath.Abs(a.g.catalog); err != nil {
					return badInput(err)
				}
			}
			if _, _, err := script.Bind(nil); err != nil {
				return badInput(err)
			}
			dst := a.out
			if output != "" {
				f, err := os.Create(output)
				if err != nil {
					return badInput(err)
				}
				defer f.Close()
				dst = f
			}
			w, err := sinks.New(a.g.format, dst)
			if err != nil {
				return badInput(err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			nc, err := natsserver.Connect(a.g.nats, nats.Name("tierflow-submit"))
			if err != nil {
				return fmt.Errorf("connect to %s: %w", a.g.nats, err)
			}
			defer nc.Close()
			info, err := coordinator.NewClient(nc).Submit(ctx, script, name, w)
			if cerr := w.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.err, "-- query %s %s: %d rows from %d workers in %s\n", info.Query, info.State, info.ResultRows,
				len(info.Workers), info.Ended.Sub(info.Submitted).Round(1e6))
			return nil
		},
	}
	c.Flags().StringVar(&name, "name", "", "query name (default: a fresh q-XXXXXXXX)")
	c.Flags().StringVarP(&output, "output", "o", "", "write the results to this file instead of stdout")
	return c
}
