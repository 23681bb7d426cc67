package connectors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tierflow/tierflow/dataflow"
)

// jetstreamInput is a pull consumer on a JetStream stream: durable when named
// (it resumes where it was acknowledged), ephemeral otherwise. Messages are
// acknowledged after their batch was emitted; MaxAckPending bounds how many
// the server hands out before that, which bounds memory.
//
// A fetcher goroutine makes the pull requests, one at a time, and hands
// their messages on in order; it asks for the next batch as soon as the
// last one has arrived, not when the reader has taken it, so that the
// server reads and sends a batch while the query decodes the one before
// (one request after the other left both idle in turn: the engine read
// JetStream at 0.20 of a bare Consume). At most one request is open:
// the server shares messages out among open requests in turn, so two
// would interleave their sequences.
type jetstreamInput struct {
	js      jetstream.JetStream
	nc      *nats.Conn
	stream  string
	name    string
	durable bool
	cons    jetstream.Consumer
	// ackAll: the consumer's policy is AckAll (acknowledging a message
	// settles every earlier one).
	ackAll bool
	pull   int
	// pullBytes bounds the bytes of one pull request.
	pullBytes int

	msgs chan jetstream.Msg // the fetched messages in order; closed when the fetcher ends
	stop chan struct{}      // closed by close
	// Set by the fetcher before it closes msgs: why it ended (nil: stopped),
	// and what its last request brought after the stop.
	err  error
	left []jetstream.Msg

	// An ephemeral consumer is read by Consume instead (startConsume says
	// why): its handler queues the messages, the reader takes them a
	// batch at a time.
	consume jetstream.ConsumeContext
	q       *msgQueue[jetstream.Msg]
	got     []jetstream.Msg // taken from q, read up to taken
	taken   int
}

// streamFor finds the stream holding subject, or creates one over it,
// bounded by b (the connectors' own: none).
func streamFor(ctx context.Context, js jetstream.JetStream, name, subject string, b StreamBound) (string, error) {
	if name != "" {
		if _, err := js.Stream(ctx, name); err == nil {
			return name, nil
		} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
			return "", err
		}
	} else {
		s, err := js.StreamNameBySubject(ctx, subject)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, jetstream.ErrStreamNotFound) {
			return "", err
		}
		name = StreamName(subject)
	}
	if b.Most > 0 {
		owned, err := OwnedStreams(ctx, js, b.Owner)
		if err != nil {
			return "", err
		}
		if len(owned) >= b.Most {
			return "", fmt.Errorf("%w: %s's queries made %d (%s), the most a user may hold; a new subject needs one, so reuse a subject of these or have an operator delete one (nats stream rm)",
				ErrStreamQuota, b.Owner, len(owned), strings.Join(owned, ", "))
		}
	}
	cfg := jetstream.StreamConfig{Name: name, Subjects: []string{subject}}
	if b.MaxBytes > 0 {
		cfg.MaxBytes, cfg.Discard = b.MaxBytes, jetstream.DiscardOld
	}
	if b.Owner != "" {
		cfg.Metadata = map[string]string{OwnerMetadata: b.Owner}
	}
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		return "", fmt.Errorf("create stream %s over %q: %w", name, subject, err)
	}
	return name, nil
}

// EnsureStream finds the stream holding subject, or creates one over
// subject alone (named StreamName(subject)), as the connectors do, bounded
// by b: a secured cluster's coordinator calls it for a query's JetStream
// subjects before deploying, so that no query part's data user need create
// a stream (a stream's subjects, sources and republishing are in the
// request's body, which no permission can restrict).
func EnsureStream(ctx context.Context, nc *nats.Conn, subject string, b StreamBound) (string, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return "", err
	}
	return streamFor(ctx, js, "", subject, b)
}

// StreamBound bounds the streams a secured coordinator makes for a user's
// queries, so that no user can fill the JetStream store the others' streams
// share: each holds at most MaxBytes (0: no bound), the server discarding
// its oldest messages past it (a retention by size, as Kafka's
// retention.bytes: a publish never fails on it), and Owner may hold Most
// of them (0: any number), counted by the owner in their metadata.
type StreamBound struct {
	Owner    string
	MaxBytes int64
	Most     int
}

// OwnerMetadata is the stream metadata key naming the user a stream was
// made for.
const OwnerMetadata = "tierflow.owner"

// ErrStreamQuota: a query needs a new JetStream stream and its owner
// already holds as many as a user may.
var ErrStreamQuota = errors.New("no more JetStream streams for this user")

// OwnedStreams are the names of the streams made for owner, sorted. It
// reads each stream's information (a client may list names and read a
// stream's information; listing every stream's in one request is a
// permission the coordinator does not have).
func OwnedStreams(ctx context.Context, js jetstream.JetStream, owner string) ([]string, error) {
	names := js.StreamNames(ctx)
	var all []string
	for n := range names.Name() {
		all = append(all, n)
	}
	if err := names.Err(); err != nil {
		return nil, fmt.Errorf("list streams: %w", err)
	}
	var owned []string
	for _, n := range all {
		s, err := js.Stream(ctx, n)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue // deleted since listed
		}
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", n, err)
		}
		if s.CachedInfo().Config.Metadata[OwnerMetadata] == owner {
			owned = append(owned, n)
		}
	}
	slices.Sort(owned)
	return owned, nil
}

// StreamName is the name of the stream a JetStream source or sink creates
// over subject when no stream holds it (names may not hold . * >).
func StreamName(subject string) string {
	return strings.NewReplacer(".", "_", "*", "ANY", ">", "ALL", " ", "_").Replace(strings.ToUpper(subject))
}

func newJetStreamInput(ctx context.Context, c SourceConfig) (input, error) {
	js, err := jetstream.New(c.Conn)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	name := c.Stream
	if name == "" {
		name = c.Streams[c.Subject]
	}
	stream, err := streamFor(ctx, js, name, c.Subject, StreamBound{})
	if err != nil {
		return nil, err
	}
	// An ephemeral consumer is this instance's alone, and the reader
	// acknowledges its messages in the order they came, once their batch
	// was emitted: acknowledging a batch's last message is acknowledging
	// the batch (AckAll), one ack where there were thousands. A durable
	// consumer may be shared by several instances (each would then settle
	// the others' messages) and keeps the policy it was made with: one
	// ack per message.
	ackAll := c.Durable == ""
	policy := jetstream.AckExplicitPolicy
	if ackAll {
		policy = jetstream.AckAllPolicy
	}
	cc := jetstream.ConsumerConfig{Durable: c.Durable, AckPolicy: policy,
		MaxAckPending: c.MaxAckPending, FilterSubject: c.Subject, DeliverPolicy: jetstream.DeliverAllPolicy}
	switch {
	case c.StartSeq > 0:
		cc.DeliverPolicy, cc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, c.StartSeq
	case c.DeliverNew:
		cc.DeliverPolicy = jetstream.DeliverNewPolicy
	}
	if c.Durable == "" {
		cc.InactiveThreshold = time.Minute
		if c.ConsumerName != nil {
			cc.Name = c.ConsumerName()
		}
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, stream, cc)
	if err != nil {
		return nil, fmt.Errorf("consumer on stream %s: %w", stream, err)
	}
	// One pull asks for what the pipeline takes next (a batch, within the
	// ack window) and no more bytes than the subscription may buffer: an
	// unbounded request of thousands of large messages overruns the
	// client, and the server then cuts the consumer as slow.
	pull := min(c.MaxRows, c.MaxAckPending)
	pullBytes := max(c.PendingBytes/4, 2*int(c.Conn.MaxPayload()))
	j := &jetstreamInput{js: js, nc: c.Conn, cons: cons, ackAll: ackAll, pull: pull, pullBytes: pullBytes, stream: stream, name: cons.CachedInfo().Name, durable: c.Durable != "",
		msgs: make(chan jetstream.Msg, pull), stop: make(chan struct{})}
	if !j.durable && !readByFetch {
		if err := j.startConsume(); err != nil {
			_ = js.DeleteConsumer(context.Background(), stream, j.name)
			return nil, err
		}
		return j, nil
	}
	go j.fetch()
	return j, nil
}

// readByFetch has ephemeral consumers read by Fetch as durable ones are
// (BenchmarkJetStreamConsume compares the two).
var readByFetch bool

// startConsume reads an ephemeral consumer by Consume: nats.go keeps a
// batch of pull requests' messages coming, its handler appends each to
// j.q (an append under a lock), and the reader takes what waits at once.
// Why not Fetch as a durable consumer does: a Fetch costs a goroutine and
// a channel per request and a channel send per message, and the reader one
// more; a bare Consume read 0.9-1.8x as many messages as a Fetch loop
// (bench ingest). A durable consumer keeps Fetch because its requests end,
// which its stop needs (close); an ephemeral one is deleted at the end,
// and what Consume had buffered beyond what was read goes with it, as
// Fetch's last request's did.
//
// Consume asks for at most j.pull messages and j.pullBytes a request and
// counts a message as taken when the handler returns: a handler waiting
// for room in a full queue holds the next requests back, so the messages
// a source holds stay bounded as with Fetch.
func (j *jetstreamInput) startConsume() error {
	j.q = newMsgQueue(j.pull, j.pullBytes, func(m jetstream.Msg) int { return len(m.Data()) }, nil)
	cc, err := j.cons.Consume(j.q.put, jetstream.PullMaxMessagesWithBytesLimit(j.pull, j.pullBytes),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			// Consume recovers by itself from missed heartbeats and
			// from a reconnect; a consumer gone is the end.
			if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) {
				j.q.fail(err)
			}
		}))
	if err != nil {
		return fmt.Errorf("consume %s on stream %s: %w", j.name, j.stream, err)
	}
	j.consume = cc
	return nil
}

// fetchWait is how long one pull request stays open on the server; a
// stopping source waits at most this long for its last request to end.
const fetchWait = 250 * time.Millisecond

// fetch makes pull requests until close or an error, handing their
// messages on; msgs holds a batch, so at most two batches wait unread.
func (j *jetstreamInput) fetch() {
	defer close(j.msgs)
	for {
		select {
		case <-j.stop:
			return
		default:
		}
		b, err := j.cons.Fetch(j.pull, jetstream.FetchMaxWait(fetchWait), jetstream.FetchMaxBytes(j.pullBytes))
		if err != nil {
			j.err = err
			return
		}
		for m := range b.Messages() {
			select {
			case j.msgs <- m:
			case <-j.stop:
				j.left = append(j.left, m)
			}
		}
		if err := b.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
			j.err = err
			return
		}
	}
}

func (j *jetstreamInput) next(ctx context.Context) (message, error) {
	if j.q != nil {
		if j.taken == len(j.got) {
			got, err := j.q.take(ctx, j.got)
			if err != nil {
				j.got, j.taken = j.got[:0], 0
				return message{}, err
			}
			j.got, j.taken = got, 0
		}
		m := j.got[j.taken]
		j.taken++
		return message{data: m.Data(), header: m.Headers(), js: m, cumulative: j.ackAll}, nil
	}
	var m jetstream.Msg
	var ok bool
	select {
	case m, ok = <-j.msgs:
	default:
		// Waiting for input is not the query's CPU time (dataflow.CPU).
		resume := dataflow.Waiting(ctx)
		select {
		case m, ok = <-j.msgs:
			resume()
		case <-ctx.Done():
			resume()
			return message{}, ctx.Err()
		}
	}
	if !ok {
		if j.err == nil {
			return message{}, errors.New("jetstream consumer closed")
		}
		return message{}, j.err
	}
	return message{data: m.Data(), header: m.Headers(), js: m, cumulative: j.ackAll}, nil
}

func (j *jetstreamInput) close() error {
	close(j.stop)
	if j.consume != nil {
		j.consume.Stop()
		j.q.close() // a handler waiting for room gives up
	}
	if !j.durable {
		// The consumer is this instance's own: deleting it ends its open
		// pull request at once (the server answers it "409 Consumer
		// Deleted") where waiting for the request to expire added up to
		// fetchWait to every query's end, and what it had sent beyond
		// what was read goes with it (a successor makes its own consumer
		// where the query's recorded position says).
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		// A failure is harmless: the server drops an idle ephemeral
		// consumer after InactiveThreshold.
		_ = j.js.DeleteConsumer(ctx, j.stream, j.name)
		if j.consume == nil {
			for range j.msgs { // ends when the fetcher has seen its request's end
			}
		}
		// Acks are published without waiting: let the server have them.
		_ = j.nc.Flush()
		return nil
	}
	// Pulls are bounded requests (not a standing subscription) so that a
	// stopping source can see the end of its last one: what it brings
	// beyond what was read goes back at once instead of after the ack
	// wait, and a consumer resuming under the same name gets it first.
	// Nak only once the request is over: a nak'd message is redelivered at
	// once, and an open request would take it back.
	var left []jetstream.Msg
	for m := range j.msgs { // ends when the fetcher has seen its request's end
		left = append(left, m)
	}
	for _, m := range append(left, j.left...) {
		_ = m.Nak()
	}
	// Acks and naks are published without waiting: make sure the server has
	// them before a successor asks for messages.
	_ = j.nc.Flush()
	return nil
}
