package main

import (
	"fmt"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/relay/relaybench"
)

// newBenchRelayCmd measures Arrow batches through the NATS relay against raw
// NATS publish/subscribe of the same bytes, in the same run, plus the
// in-process backend and the one-hop latency of each.
func newBenchRelayCmd(a *app) *cobra.Command {
	var o relaybench.Options
	c := &cobra.Command{
		Use:   "relay",
		Short: "Relay throughput and latency vs raw NATS (ratio >= 0.8 is the target)",
		Long: `Sends Arrow batches through the NATS relay (IPC encoding, framing, chunking,
credit flow control, decoding) and publishes the same number of bytes with bare
NATS, alternating, and reports the median of each: batches/s, MB/s, their ratio,
the process CPU time per MB of each and their ratio (steadier than wall-clock on
a busy machine), and p50/p99 one-hop latency. The raw baseline keeps the same
in-flight window as the relay. The in-process backend is measured alongside. Both
ends run in this process over loopback, against an embedded server unless
--nats names one; across processes is not measured yet.`,
		Example: `  tierflow bench relay
  tierflow bench relay --rows 1024 --mb 200 --format json
  tierflow bench relay --rows 16384 --max-payload 1048576   # chunked batches`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.MB < 0 || o.Rounds < 0 || o.Latency < 0 || o.Window < 0 || o.MaxPayload < 0 {
				return badInput(fmt.Errorf("--mb, --rounds, --latency, --window and --max-payload must not be negative"))
			}
			for _, r := range o.Rows {
				if r <= 0 {
					return badInput(fmt.Errorf("--rows: %d rows per batch, want at least 1", r))
				}
			}
			if a.g.format != "" && a.g.format != "table" && a.g.format != "json" {
				return badInput(fmt.Errorf("unknown --format %q: want table or json", a.g.format))
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			o.URL = a.g.nats
			o.Progress = a.err
			rows, err := relaybench.Run(ctx, o)
			if err != nil {
				return err
			}
			return printRows(a.out, a.g.format, rows)
		},
	}
	f := c.Flags()
	f.IntSliceVar(&o.Rows, "rows", []int{64, 1024, 4096}, "rows per batch, one case each (a row is ~270 bytes: id, timestamp, 64-float tensor)")
	f.IntVar(&o.MB, "mb", 48, "megabytes moved per throughput measurement")
	f.IntVar(&o.Rounds, "rounds", 3, "alternating raw/relay measurements per case; the median is reported")
	f.IntVar(&o.Latency, "latency", 200, "one-at-a-time sends for the latency percentiles")
	f.IntVar(&o.Window, "window", 32, "relay credit window in messages")
	f.Int32Var(&o.MaxPayload, "max-payload", 0, "embedded server's max payload in bytes (default 8 MiB); larger batches are chunked")
	return c
}
