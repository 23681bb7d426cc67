// Package ingest is `tierflow bench ingest`: how many events a second the
// engine consumes from a core NATS subject and from a JetStream stream,
// beside a bare nats.go subscriber and a bare JetStream pull consumer on the
// same embedded server, in one process, taking turns.
package ingest

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/relay/natsserver"
)

// Row is one consumer's measurement on one transport.
type Row struct {
	Transport string `json:"transport"`
	Consumer  string `json:"consumer"`
	Messages  int    `json:"messages"`
	Received  int64  `json:"received_median"`
	// Dropped is the median of the messages a core NATS consumer lost
	// (its subscription's buffer was full); received + dropped is every
	// message.
	Dropped int64   `json:"dropped_median"`
	Seconds float64 `json:"seconds_median"`
	PerSec  float64 `json:"events_per_sec"`
	// CPUPerMsg is the median of the process's CPU time (user and system,
	// every goroutine: publisher, server and consumer) over the turn (a
	// JetStream turn's from the consumer's start, after storing), per
	// message received, in microseconds. Other processes' load moves
	// a turn's wall time far more than its CPU time.
	CPUPerMsg float64 `json:"cpu_us_per_msg"`
	// VsBare is the median over the repetitions of the consumer's rate
	// over the fastest bare consumer's on its transport in the same
	// repetition (a bare consumer's own row says how far it is from the
	// fastest).
	VsBare float64 `json:"vs_bare"`
	// VsBareMin and VsBareMax are the spread of that ratio over the
	// repetitions.
	VsBareMin float64 `json:"vs_bare_min"`
	VsBareMax float64 `json:"vs_bare_max"`
	// VsDecoding (core NATS) is the median over the repetitions of the
	// consumer's rate over the bare subscriber that decodes the query's
	// columns with encoding/json in the same repetition.
	VsDecoding float64 `json:"vs_decoding_bare,omitempty"`
}

// Options size a run.
type Options struct {
	Messages int
	Reps     int
	// BatchSize is the engine's rows per source batch (tierflow run's
	// --batch-size).
	BatchSize int
	// Shape names the messages (shapes); "" is bid.
	Shape string
	// Transport is "core", "jetstream" or "" (both).
	Transport string
	Progress  *cli.Progress
}

// Command is `tierflow bench ingest`.
func Command(env *bench.Env) *cobra.Command {
	var o Options
	c := &cobra.Command{
		Use:   "ingest",
		Short: "Events per second consumed from core NATS and JetStream: the engine against bare nats.go subscribers and pull consumers",
		Long: `bench ingest starts an embedded NATS server with JetStream and sends --messages
JSON messages (--shape: Nexmark bids by default) over it, then compares what
consumes them, in this process, taking turns --reps times after one untimed
warm-up turn each (a tenth of the messages):

  core NATS: two bare nats.go subscribers (Subscribe: one counting the
  messages, the floor of what the transport costs; one decoding each into a
  Go struct of the columns the query reads with encoding/json, what a user's
  subscriber needs to do to use them) and the engine (the query over CREATE
  STREAM ... FROM NATS, each message decoded into Arrow columns), each while
  a publisher sends the messages as fast as it can. All subscriptions have
  the engine's pending limits; what they drop is not counted as consumed.
  JetStream: the messages stored in a stream first, then three bare pull
  consumers (Consume, counting: acknowledging each message; under AckAll,
  acknowledging the last of every --batch-size messages, as the engine's
  ephemeral consumer does; under AckNone, acknowledging nothing) and the
  engine (FROM JETSTREAM) each read all of them.

events/s is messages consumed over the time from the first publish (core) or
the consumer's start (JetStream) to the last message; cpu us/msg is the
process's CPU time over the turn (publisher, server and consumer; on
JetStream from the consumer's start) per message received; vs bare is the median, over the turns, of a consumer's rate over the
fastest bare consumer's on its transport in the same turn (min and max its
spread); vs decoding bare, over the decoding bare subscriber's.`,
		Example: `  tierflow bench ingest --messages 200000 --reps 3
  tierflow bench ingest --transport core --shape wide --messages 100000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Messages < 1 || o.Reps < 1 || o.BatchSize < 1 {
				return cli.BadInput(fmt.Errorf("--messages, --reps and --batch-size must be at least 1"))
			}
			if _, err := shapeNamed(o.Shape); err != nil {
				return cli.BadInput(err)
			}
			cases, err := selected(o.Transport)
			if err != nil {
				return cli.BadInput(err)
			}
			o.Progress = env.Progress(int64(len(cases)*(o.Reps+1)), "runs")
			rows, err := Run(cmd.Context(), o)
			o.Progress.Done()
			if err != nil {
				return err
			}
			return env.PrintRows(rows)
		},
	}
	fl := c.Flags()
	fl.IntVar(&o.Messages, "messages", 200_000, "messages per run")
	fl.IntVar(&o.Reps, "reps", 3, "turns of each consumer; medians are reported")
	fl.IntVar(&o.BatchSize, "batch-size", 4096, "the engine's rows per source batch")
	fl.StringVar(&o.Shape, "shape", "bid", "the messages: bid (Nexmark bids, ~180 bytes), small (~95 bytes) or wide (~0.9 KB, keys out of declared order)")
	fl.StringVar(&o.Transport, "transport", "", "core or jetstream (default: both)")
	return c
}

// selected are the consumers of transport ("core", "jetstream", "": all).
func selected(transport string) ([]consumer, error) {
	var want string
	switch strings.ToLower(transport) {
	case "":
		return consumers, nil
	case "core":
		want = "core NATS"
	case "jetstream":
		want = "JetStream"
	default:
		return nil, fmt.Errorf("unknown --transport %q (core or jetstream)", transport)
	}
	var out []consumer
	for _, c := range consumers {
		if c.transport == want {
			out = append(out, c)
		}
	}
	return out, nil
}

// Run measures the consumers.
func Run(ctx context.Context, o Options) ([]Row, error) {
	if o.Shape == "" {
		o.Shape = "bid"
	}
	sh, err := shapeNamed(o.Shape)
	if err != nil {
		return nil, err
	}
	cases, err := selected(o.Transport)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "tierflow-ingest")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	srv, err := natsserver.Start(natsserver.Options{JetStream: true, StoreDir: dir, Name: "ingest"})
	if err != nil {
		return nil, err
	}
	defer srv.Shutdown()
	msgs := sh.make(o.Messages)
	res := make([][]result, len(cases))
	// The first turn of each consumer, over a tenth of the messages, is
	// not counted: it finds the server, the heap and the code cold.
	warm := msgs[:max(len(msgs)/10, min(len(msgs), 1000))]
	turnNo := 0
	for r := -1; r < o.Reps; r++ {
		for _, k := range turnOrder(cases, r+1) {
			c := cases[k]
			if o.Progress != nil {
				what := c.transport + ", " + c.consumer
				if r < 0 {
					what += " (warm-up)"
				}
				o.Progress.Describe(what)
			}
			m := msgs
			if r < 0 {
				m = warm
			}
			turnNo++
			// The turn's goroutines (its connections' and the query's) carry
			// its consumer's label (no commas: pprof's -tagfocus splits on
			// them): a -cpuprofile of BenchmarkIngestCore splits by it
			// (-tagfocus consumer=engine).
			var got result
			label := strings.NewReplacer(",", "", " ", "_").Replace(c.consumer)
			pprof.Do(ctx, pprof.Labels("consumer", label), func(ctx context.Context) {
				got, err = measured(func() (result, error) { return c.f(ctx, srv, sh, m, turnNo, o) })
			})
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %w", c.transport, c.consumer, err)
			}
			if r >= 0 {
				res[k] = append(res[k], got)
			}
			if o.Progress != nil {
				o.Progress.Add(1)
			}
		}
	}
	var rows []Row
	for i, c := range cases {
		var secs, ratios, vsDec, cpu, rates []float64
		var recv, drops []int64
		for r, x := range res[i] {
			secs = append(secs, x.elapsed.Seconds())
			recv = append(recv, x.received)
			drops = append(drops, x.dropped)
			rates = append(rates, x.rate())
			if x.received > 0 {
				cpu = append(cpu, x.cpu.Seconds()*1e6/float64(x.received))
			}
			fastest := 0.0
			for j, b := range cases {
				if b.transport == c.transport && b.bare {
					fastest = max(fastest, res[j][r].rate())
				}
				if b.transport == c.transport && b.decoding {
					vsDec = append(vsDec, x.rate()/res[j][r].rate())
				}
			}
			ratios = append(ratios, x.rate()/fastest)
		}
		row := Row{Transport: c.transport, Consumer: c.consumer, Messages: o.Messages,
			Received: medianInt(recv), Dropped: medianInt(drops), Seconds: median(secs), PerSec: median(rates),
			VsBare: median(ratios), VsBareMin: slices.Min(ratios), VsBareMax: slices.Max(ratios)}
		if len(cpu) > 0 {
			row.CPUPerMsg = median(cpu)
		}
		if len(vsDec) > 0 {
			row.VsDecoding = median(vsDec)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// measured runs a turn and gives it the process's CPU time over it unless
// the turn measured its own (a JetStream turn's, after storing).
func measured(f func() (result, error)) (result, error) {
	before := bench.ProcessCPU()
	r, err := f()
	if r.cpu == 0 {
		r.cpu = bench.ProcessCPU() - before
	}
	return r, err
}

// consumer is one of the consumers measured.
type consumer struct {
	transport, consumer string
	// bare: a baseline; decoding: the bare subscriber that decodes.
	bare, decoding bool
	f              func(ctx context.Context, srv *natsserver.Server, sh shape, msgs [][]byte, turn int, o Options) (result, error)
}

// consumers are the consumers measured, in the order of the table; each
// transport's engine last.
var consumers = []consumer{
	{"core NATS", "bare subscriber, counting", true, false, bareCore(false)},
	{"core NATS", "bare subscriber, decoding (encoding/json)", true, true, bareCore(true)},
	{"core NATS", "engine", false, false, engineCore},
	{"JetStream", "bare pull consumer, ack each", true, false, bareJetStream(jetstream.AckExplicitPolicy)},
	{"JetStream", "bare pull consumer, AckAll per batch", true, false, bareJetStream(jetstream.AckAllPolicy)},
	{"JetStream", "bare pull consumer, AckNone", true, false, bareJetStream(jetstream.AckNonePolicy)},
	{"JetStream", "engine", false, false, engineJetStream},
}

// turnOrder is the order of the consumers in repetition r: a transport's
// consumers one after the other, reversed every other repetition so that
// none always runs first (on a warm server, a cold cache).
func turnOrder(cases []consumer, r int) []int {
	var order []int
	for i := 0; i < len(cases); {
		j := i
		for j < len(cases) && cases[j].transport == cases[i].transport {
			j++
		}
		for k := i; k < j; k++ {
			if r%2 == 1 {
				order = append(order, i+j-1-k)
			} else {
				order = append(order, k)
			}
		}
		i = j
	}
	return order
}

// result is one consumer's turn.
type result struct {
	received, dropped int64
	elapsed           time.Duration
	cpu               time.Duration // the process's, over the turn
}

func (r result) rate() float64 { return float64(r.received) / r.elapsed.Seconds() }

// streamDDL declares the shape's messages over a subject (source NATS or
// JETSTREAM) as the stream bid.
func streamDDL(sh shape, source, subject string) string {
	return fmt.Sprintf("CREATE STREAM bid (%s) FROM %s '%s' FORMAT JSON;\n", sh.columns, source, subject)
}

// waitInterest waits until subject has a subscriber on srv.
func waitInterest(ctx context.Context, srv *natsserver.Server, nc *nats.Conn, subject string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		acc := srv.NATS().GlobalAccount()
		if acc != nil && acc.Interest(subject) > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no subscriber on %q after 10 s", subject)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianInt(xs []int64) int64 {
	s := append([]int64(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
