package relay

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/runtime/cluster"
)

// newBenchRelayCmd measures Arrow batches through the NATS relay against raw
// NATS publish/subscribe of the same bytes, in the same run, in one process
// and across processes, plus the in-process backend and the one-hop latency
// of each.
func Command(benv *bench.Env) *cobra.Command {
	var o Options
	var modes []string
	c := &cobra.Command{
		Use:   "relay",
		Short: "Relay throughput and latency vs raw NATS (ratio >= 0.8 is the target)",
		Long: `Sends Arrow batches through the NATS relay (IPC encoding, framing, chunking,
credit flow control, decoding) and publishes the same number of bytes with bare
NATS, alternating, and reports the median of each: batches/s, MB/s, their ratio,
the CPU time per MB of each and their ratio (steadier than wall-clock on a busy
machine), and p50/p99 one-hop latency of relay and raw NATS with the latency the
relay adds (relay - raw). The raw baseline keeps the relay's fixed window in
flight, or 32 messages where the relay's grows by bytes (up to 2 MiB of small
batches: 117 at 64 rows); there it runs again with as many in flight as the
relay (same_window_ratio: the relay's MB/s over it). It publishes ready-made
bytes that nobody decodes. In process a second baseline moves the
Arrow batch itself over bare NATS, encoded and decoded with the relay's codec
but with no framing, credit, acks or hand-off (ipc_ratio: the relay's MB/s over
it), which is what the relay's protocol costs; for a batch that fits one
message. In process raw NATS's window is a counter its publisher shares
with its subscriber, flow control that costs nothing, which the relay's
credit (and raw NATS across processes) sends over NATS; so raw NATS runs
again with the relay's window, reported over NATS every half window
(credited_ratio: the relay's MB/s over it), for a batch that fits one
message.

Two modes: in-process runs both ends in this process over loopback (the
in-process backend is measured alongside); processes runs the receiving ends
(relay receiver, raw subscriber) in a child tierflow process on its own
connection, so every batch crosses a process boundary over TCP; its CPU time
counts both processes. The server is embedded unless --nats names one.
--format json prints every field; the table shows the main ones.`,
		Example: `  tierflow bench relay
  tierflow bench relay --rows 1024 --mb 200 --mode processes --format json
  tierflow bench relay --rows 16384 --max-payload 1048576   # chunked batches`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.MB < 0 || o.Rounds < 0 || o.Latency < 0 || o.Window < 0 || o.MaxPayload < 0 {
				return cli.BadInput(fmt.Errorf("--mb, --rounds, --latency, --window and --max-payload must not be negative"))
			}
			for _, r := range o.Rows {
				if r <= 0 {
					return cli.BadInput(fmt.Errorf("--rows: %d rows per batch, want at least 1", r))
				}
			}
			o.Modes = nil
			for _, m := range modes {
				mode, err := ParseMode(m)
				if err != nil {
					return cli.BadInput(fmt.Errorf("--mode: %w", err))
				}
				o.Modes = append(o.Modes, mode)
			}
			if benv.G().Format != "" && benv.G().Format != "table" && benv.G().Format != "json" {
				return cli.BadInput(fmt.Errorf("unknown --format %q: want table or json", benv.G().Format))
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			if benv.G().NATSConfig != "" {
				return cli.BadInput(fmt.Errorf("--nats-config: bench relay starts its own plain server; name a configured one with --nats"))
			}
			if benv.G().NATS != "" {
				if o.NATS, err = benv.G().NATSAuth.Options(benv.G().NATS); err != nil {
					return cli.BadInput(err)
				}
			}
			auth := benv.G().NATSAuth
			o.Peer = func(url, control string) *exec.Cmd {
				// Like run --processes: no credentials on the child's
				// command line (ps shows it), a password in its environment.
				bare, flags, env := cluster.ChildAuth(url, auth)
				c := exec.Command(exe, append([]string{"bench", "relay-peer", "--nats", bare, "--control", control}, flags...)...)
				c.Env = append(os.Environ(), env...)
				return c
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			o.URL = benv.G().NATS
			// A bar on a terminal; elsewhere the detailed lines are the
			// progress, with the plain counter between them.
			p := benv.Progress(int64(o.Steps()), "bench relay")
			o.Tick = func(what string) {
				p.Describe("bench relay: " + what)
				p.Add(1)
			}
			if !cli.IsTerminal(benv.Err) {
				o.Progress = benv.Err
			}
			rows, err := Run(ctx, o)
			p.Done()
			if err != nil {
				return err
			}
			if benv.G().Format == "json" {
				return benv.PrintRows(rows)
			}
			return benv.PrintRows(relayTable(rows))
		},
	}
	f := c.Flags()
	f.IntSliceVar(&o.Rows, "rows", []int{64, 1024, 4096}, "rows per batch, one case each (a row is ~270 bytes: id, timestamp, 64-float tensor)")
	f.StringSliceVar(&modes, "mode", []string{"in-process", "processes"}, "where the receiving ends run: in-process, processes (a child process), or both")
	f.IntVar(&o.MB, "mb", 48, "megabytes moved per throughput measurement")
	f.IntVar(&o.Rounds, "rounds", 3, "alternating raw/relay measurements per case; the median is reported")
	f.IntVar(&o.Latency, "latency", 200, "one-at-a-time sends for the latency percentiles")
	f.IntVar(&o.Window, "window", 0, "relay credit window in messages, fixed (0: the relay's, 32 growing to 256 while batches are small)")
	f.Int32Var(&o.MaxPayload, "max-payload", 0, "embedded server's max payload in bytes (default 8 MiB); larger batches are chunked")
	return c
}

// relayTableRow is the part of a Row the table shows; JSON has
// every field.
type relayTableRow struct {
	Mode     string  `json:"mode"`
	Case     string  `json:"case"`
	BatchKB  float64 `json:"batch_kb"`
	BatchesS float64 `json:"batches_s"`
	RelayMBs float64 `json:"relay_mb_s"`
	RawMBs   float64 `json:"raw_mb_s"`
	Ratio    float64 `json:"ratio"`
	CPURatio float64 `json:"cpu_ratio"`
	// IPCRatio is the ratio to bare NATS with the batch's Arrow encoding
	// and decoding (Row.IPCRatio); 0 where not measured.
	IPCRatio float64 `json:"ipc_ratio"`
	// SameRatio is the ratio to raw NATS with the relay's in-flight bytes
	// (Row.SameRatio); 0 where the windows match.
	SameRatio float64 `json:"same_window_ratio"`
	// CreditedRatio is the ratio to raw NATS whose window is kept over
	// NATS, as the relay's credit is (Row.CreditedRatio); 0 where not
	// measured.
	CreditedRatio float64 `json:"credited_ratio"`
	P50us         float64 `json:"p50_us"`
	P99us         float64 `json:"p99_us"`
	RawP50us      float64 `json:"raw_p50_us"`
	RawP99us      float64 `json:"raw_p99_us"`
	AddedP50      float64 `json:"added_p50_us"`
	AddedP99      float64 `json:"added_p99_us"`
}

func relayTable(rows []Row) []relayTableRow {
	out := make([]relayTableRow, len(rows))
	for i, r := range rows {
		out[i] = relayTableRow{Mode: r.Mode, Case: r.Case, BatchKB: r.BatchKB, BatchesS: r.BatchesS,
			RelayMBs: r.RelayMBs, RawMBs: r.RawMBs, Ratio: r.Ratio, CPURatio: r.CPURatio, IPCRatio: r.IPCRatio, SameRatio: r.SameRatio,
			CreditedRatio: r.CreditedRatio, P50us: r.P50us, P99us: r.P99us, RawP50us: r.RawP50us, RawP99us: r.RawP99us,
			AddedP50: r.AddedP50s, AddedP99: r.AddedP99s}
	}
	return out
}
