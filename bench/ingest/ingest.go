// Package ingest is `tierflow bench ingest`: how many events a second the
// engine consumes from a core NATS subject and from a JetStream stream,
// beside a bare nats.go subscriber and a bare JetStream pull consumer on the
// same embedded server, in one process, taking turns.
package ingest

import (
	"context"
	"fmt"
	"math/rand"
	"os"
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
	// VsBare is the median over the repetitions of the consumer's rate
	// over the fastest bare consumer's on its transport in the same
	// repetition (a bare consumer's own row says how far it is from the
	// fastest).
	VsBare float64 `json:"vs_bare"`
	// VsBareMin and VsBareMax are the spread of that ratio over the
	// repetitions.
	VsBareMin float64 `json:"vs_bare_min"`
	VsBareMax float64 `json:"vs_bare_max"`
}

// Options size a run.
type Options struct {
	Messages int
	Reps     int
	// BatchSize is the engine's rows per source batch (tierflow run's
	// --batch-size).
	BatchSize int
	Progress  *cli.Progress
}

// Command is `tierflow bench ingest`.
func Command(env *bench.Env) *cobra.Command {
	var o Options
	c := &cobra.Command{
		Use:   "ingest",
		Short: "Events per second consumed from core NATS and JetStream: the engine against a bare nats.go subscriber and pull consumer",
		Long: `bench ingest starts an embedded NATS server with JetStream and sends --messages
Nexmark bids, one JSON object a message, over it, then compares what consumes
them, in this process, taking turns --reps times:

  core NATS: a bare nats.go subscriber (Subscribe, counting messages) and the
  engine (a query over CREATE STREAM ... FROM NATS, each message decoded into
  Arrow columns), each while a publisher sends the messages as fast as it
  can. Both subscriptions have the engine's pending limits; what they drop
  is not counted as consumed.
  JetStream: the messages stored in a stream first, then three bare pull
  consumers (Consume: acknowledging each message; under AckAll,
  acknowledging the last of every --batch-size messages, as the engine's
  ephemeral consumer does; under AckNone, acknowledging nothing) and the
  engine (FROM JETSTREAM) each read all of them.

events/s is messages consumed over the time from the first publish (core) or
the consumer's start (JetStream) to the last message; vs bare is the median,
over the turns, of a consumer's rate over the fastest bare consumer's on its
transport in the same turn.`,
		Example: `  tierflow bench ingest --messages 200000 --reps 3`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Messages < 1 || o.Reps < 1 || o.BatchSize < 1 {
				return cli.BadInput(fmt.Errorf("--messages, --reps and --batch-size must be at least 1"))
			}
			o.Progress = env.Progress(int64(len(consumers)*o.Reps), "runs")
			rows, err := Run(cmd.Context(), o)
			o.Progress.Done()
			if err != nil {
				return err
			}
			return env.PrintRows(rows)
		},
	}
	fl := c.Flags()
	fl.IntVar(&o.Messages, "messages", 200_000, "messages (bids) per run")
	fl.IntVar(&o.Reps, "reps", 3, "turns of each consumer; medians are reported")
	fl.IntVar(&o.BatchSize, "batch-size", 4096, "the engine's rows per source batch")
	return c
}

// Run measures the four consumers.
func Run(ctx context.Context, o Options) ([]Row, error) {
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
	msgs := bids(o.Messages)
	cases := consumers
	res := make([][]result, len(cases))
	for r := 0; r < o.Reps; r++ {
		for _, k := range turnOrder(cases, r) {
			c := cases[k]
			if o.Progress != nil {
				o.Progress.Describe(c.transport + ", " + c.consumer)
			}
			got, err := c.f(ctx, srv, msgs, r*len(cases)+k, o)
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %w", c.transport, c.consumer, err)
			}
			res[k] = append(res[k], got)
			if o.Progress != nil {
				o.Progress.Add(1)
			}
		}
	}
	var rows []Row
	for i, c := range cases {
		var secs, ratios []float64
		var recv, drops []int64
		for r, x := range res[i] {
			secs = append(secs, x.elapsed.Seconds())
			recv = append(recv, x.received)
			drops = append(drops, x.dropped)
			fastest := 0.0
			for j, b := range cases {
				if b.transport == c.transport && b.bare {
					fastest = max(fastest, res[j][r].rate())
				}
			}
			ratios = append(ratios, x.rate()/fastest)
		}
		row := Row{Transport: c.transport, Consumer: c.consumer, Messages: o.Messages,
			Received: medianInt(recv), Dropped: medianInt(drops), Seconds: median(secs), VsBare: median(ratios),
			VsBareMin: slices.Min(ratios), VsBareMax: slices.Max(ratios)}
		var rates []float64
		for _, x := range res[i] {
			rates = append(rates, x.rate())
		}
		row.PerSec = median(rates)
		rows = append(rows, row)
	}
	return rows, nil
}

// consumer is one of the consumers measured.
type consumer struct {
	transport, consumer string
	bare                bool
	f                   func(ctx context.Context, srv *natsserver.Server, msgs [][]byte, turn int, o Options) (result, error)
}

// consumers are the consumers measured, in the order of the table; each
// transport's engine last.
var consumers = []consumer{
	{"core NATS", "bare subscriber", true, bareCore},
	{"core NATS", "engine", false, engineCore},
	{"JetStream", "bare pull consumer, ack each", true, bareJetStream(jetstream.AckExplicitPolicy)},
	{"JetStream", "bare pull consumer, AckAll per batch", true, bareJetStream(jetstream.AckAllPolicy)},
	{"JetStream", "bare pull consumer, AckNone", true, bareJetStream(jetstream.AckNonePolicy)},
	{"JetStream", "engine", false, engineJetStream},
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
}

func (r result) rate() float64 { return float64(r.received) / r.elapsed.Seconds() }

// bids are n Nexmark bids as JSON objects, in event-time order (10,000 a
// second of event time), fields as bench nexmark's bid.csv.
func bids(n int) [][]byte {
	rng := rand.New(rand.NewSource(1))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	channels := []string{"Google", "Facebook", "Baidu", "Apple"}
	word := func(k int) string {
		var b strings.Builder
		for i := 0; i < k; i++ {
			b.WriteByte(byte('a' + rng.Intn(26)))
		}
		return b.String()
	}
	out := make([][]byte, n)
	for i := range out {
		at := base.Add(time.Duration(i) * 100 * time.Microsecond)
		out[i] = fmt.Appendf(nil, `{"auction":%d,"bidder":%d,"price":%d,"channel":%q,"url":"https://www.nexmark.com/%s/%s/item.htm?query=1","dateTime":%q,"extra":%q}`,
			1000+rng.Intn(10000), 1000+rng.Intn(10000), 100+rng.Intn(1_000_000), channels[rng.Intn(len(channels))],
			word(5), word(5), at.Format(time.RFC3339Nano), word(8))
	}
	return out
}

// streamDDL declares the bids over a subject (source NATS or JETSTREAM).
func streamDDL(source, subject string) string {
	return fmt.Sprintf("CREATE STREAM bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, dateTime TIMESTAMP, extra VARCHAR) FROM %s '%s' FORMAT JSON;\n", source, subject)
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
