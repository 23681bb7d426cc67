package ingest

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/connectors"
)

// pendingLimits are the engine's pending limits on a core NATS
// subscription (connectors.SourceConfig's defaults), given to the bare
// subscribers too.
func pendingLimits() (msgs, bytes int) { return connectors.SourceConfig{}.PendingLimits() }

// quiet is how long a consumer that lost the end marker (a core NATS drop)
// waits with nothing arriving before its turn ends.
const quiet = time.Second

// poll is how often a lossy turn reads its consumer's count: the error of
// its end time.
const poll = 2 * time.Millisecond

func endMsg(subject string) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Header.Set(connectors.EndHeader, "1")
	return m
}

// publishCore sends msgs and the end marker on subject as fast as the
// connection takes them.
func publishCore(nc *nats.Conn, subject string, msgs [][]byte) error {
	for _, m := range msgs {
		if err := nc.Publish(subject, m); err != nil {
			return err
		}
	}
	if err := nc.PublishMsg(endMsg(subject)); err != nil {
		return err
	}
	return nc.Flush()
}

// turn is one consumer's run over the messages: done is sent on (nil) or
// closed once it took the end marker, or sent its error; count is the
// messages it has taken so far, dropped those it lost (core NATS); stop
// ends a consumer that lost the end marker.
type turn struct {
	done    <-chan error
	count   func() int64
	dropped func() int64
	stop    func()
}

// wait waits for t's end and measures it from start. A core NATS consumer
// (lossy) may lose the end marker with other drops: then its turn ends once
// nothing has come for quiet, at the time its count last moved (polled
// every poll: it was read once a quiet, which put the end up to a whole
// quiet after the last message and made a lossy turn of half a second look
// three times as slow).
func (t turn) wait(ctx context.Context, start time.Time, lossy bool) (result, error) {
	end := func(elapsed time.Duration) result {
		r := result{received: t.count(), elapsed: elapsed}
		if t.dropped != nil {
			r.dropped = t.dropped()
		}
		return r
	}
	var tick <-chan time.Time
	if lossy {
		tk := time.NewTicker(poll)
		defer tk.Stop()
		tick = tk.C
	}
	prev, moved := int64(-1), start
	for {
		select {
		case err := <-t.done:
			if err != nil {
				return result{}, err
			}
			return end(time.Since(start)), nil
		case <-ctx.Done():
			return result{}, ctx.Err()
		case <-tick:
			// The time the count is read, not the tick's: a tick that
			// waited in its channel (a busy machine) carries an older
			// time than the count read now, and the end came before it.
			now := time.Now()
			if cur := t.count(); cur != prev {
				prev, moved = cur, now
				continue
			}
			if now.Sub(moved) < quiet {
				continue
			}
			if t.stop != nil {
				t.stop()
			}
			return end(moved.Sub(start)), nil
		}
	}
}

// bareCore is a nats.go subscriber that counts messages, and with decode
// first unmarshals each into a struct of the columns the query reads
// (a message that does not decode is an error: the shapes' all do).
func bareCore(decode bool) func(ctx context.Context, srv *natsserver.Server, sh shape, msgs [][]byte, turnNo int, o Options) (result, error) {
	return func(ctx context.Context, srv *natsserver.Server, sh shape, msgs [][]byte, turnNo int, o Options) (result, error) {
		return bareCoreTurn(ctx, srv, sh, msgs, turnNo, decode)
	}
}

func bareCoreTurn(ctx context.Context, srv *natsserver.Server, sh shape, msgs [][]byte, turnNo int, decode bool) (result, error) {
	subject := fmt.Sprintf("bench.ingest.core.%d", turnNo)
	nc, err := srv.Connect()
	if err != nil {
		return result{}, err
	}
	defer nc.Close()
	var n atomic.Int64
	done := make(chan error, 1)
	failed := false
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		if m.Header != nil && m.Header.Get(connectors.EndHeader) != "" {
			close(done)
			return
		}
		if decode && !sh.decode(m.Data) && !failed {
			failed = true
			done <- fmt.Errorf("message %d did not decode: %.80s", n.Load()+1, m.Data)
		}
		n.Add(1)
	})
	if err != nil {
		return result{}, err
	}
	if err := sub.SetPendingLimits(pendingLimits()); err != nil {
		return result{}, err
	}
	if err := nc.Flush(); err != nil {
		return result{}, err
	}
	dropped := func() int64 { d, _ := sub.Dropped(); return int64(d) }
	return publishAndWait(ctx, srv, subject, msgs, turn{done: done, count: n.Load, dropped: dropped})
}

// publishAndWait publishes msgs on subject and waits for t to take them.
func publishAndWait(ctx context.Context, srv *natsserver.Server, subject string, msgs [][]byte, t turn) (result, error) {
	pub, err := srv.Connect()
	if err != nil {
		return result{}, err
	}
	defer pub.Close()
	start := time.Now()
	if err := publishCore(pub, subject, msgs); err != nil {
		return result{}, err
	}
	return t.wait(ctx, start, true)
}

// engineCore runs a query over the subject FROM NATS while the messages
// are published.
func engineCore(ctx context.Context, srv *natsserver.Server, sh shape, msgs [][]byte, turnNo int, o Options) (result, error) {
	subject := fmt.Sprintf("bench.ingest.core.%d", turnNo)
	nc, err := srv.Connect()
	if err != nil {
		return result{}, err
	}
	defer nc.Close()
	qctx, stop := context.WithCancel(ctx)
	defer stop()
	q := engineQuery(qctx, nc, sh, "NATS", subject, o)
	if err := waitInterest(ctx, srv, nc, subject); err != nil {
		return result{}, err
	}
	return publishAndWait(ctx, srv, subject, msgs, q.turn(stop))
}

// query is an engine query running in the background.
type query struct {
	rows  atomic.Int64
	done  chan error
	stats connectors.Stats
}

// turn is the query's turn; stop cancels it.
func (q *query) turn(stop func()) turn {
	return turn{done: q.done, count: q.rows.Load, dropped: q.stats.Dropped.Load, stop: func() { stop(); <-q.done }}
}

func (q *query) Write(rec arrow.Record) error { q.rows.Add(rec.NumRows()); return nil }
func (q *query) Close() error                 { return nil }

// engineQuery starts the shape's query over the subject on the local
// executor, its rows counted.
func engineQuery(ctx context.Context, nc *nats.Conn, sh shape, source, subject string, o Options) *query {
	q := &query{done: make(chan error, 1)}
	hooks := connectors.Hooks{Conn: func() (*nats.Conn, error) { return nc, nil },
		Sources: connectors.SourceConfig{MaxRows: o.BatchSize, Stats: &q.stats}}
	go func() {
		q.done <- exec.RunScript(ctx, filepath.Join(".", "ingest.sql"), streamDDL(sh, source, subject)+sh.query, exec.ScriptOptions{
			Options:   exec.Options{Stream: hooks.Stream, BatchSize: o.BatchSize},
			NewOutput: func() (sinks.Writer, error) { return q, nil },
		})
	}()
	return q
}

// storeJetStream puts msgs and the end marker in a stream of their own.
func storeJetStream(ctx context.Context, nc *nats.Conn, subject string, msgs [][]byte) (jetstream.JetStream, string, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, "", err
	}
	name := connectors.StreamName(subject)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject}}); err != nil {
		return nil, "", err
	}
	for i, m := range msgs {
		if _, err := js.PublishAsync(subject, m); err != nil {
			return nil, "", err
		}
		if i%1024 == 1023 { // within the client's 4,000 pending publishes
			select {
			case <-js.PublishAsyncComplete():
			case <-ctx.Done():
				return nil, "", ctx.Err()
			}
		}
	}
	if _, err := js.PublishMsg(ctx, endMsg(subject)); err != nil {
		return nil, "", err
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return nil, "", ctx.Err()
	}
	return js, name, nil
}

// bareJetStream is a pull consumer (Consume) under policy: AckExplicit
// acknowledges each message, AckAll the last of every o.BatchSize messages
// (and the last one), AckNone nothing.
func bareJetStream(policy jetstream.AckPolicy) func(ctx context.Context, srv *natsserver.Server, sh shape, msgs [][]byte, turnNo int, o Options) (result, error) {
	return func(ctx context.Context, srv *natsserver.Server, _ shape, msgs [][]byte, turnNo int, o Options) (result, error) {
		return onStoredStream(ctx, srv, msgs, turnNo, func(_ *nats.Conn, js jetstream.JetStream, name, _ string) (result, error) {
			return bareConsume(ctx, js, name, policy, o)
		})
	}
}

// bareConsume is bareJetStream's turn over the stored stream name.
func bareConsume(ctx context.Context, js jetstream.JetStream, name string, policy jetstream.AckPolicy, o Options) (result, error) {
	start, cpu := time.Now(), bench.ProcessCPU()
	cfg := jetstream.ConsumerConfig{AckPolicy: policy, DeliverPolicy: jetstream.DeliverAllPolicy}
	if policy == jetstream.AckAllPolicy {
		// The server stops at MaxAckPending unacknowledged messages
		// (default 1,000): room for the batches between acks, as the
		// engine's source has.
		cfg.MaxAckPending = 4 * o.BatchSize
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, name, cfg)
	if err != nil {
		return result{}, err
	}
	var n atomic.Int64
	done := make(chan error)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		end := m.Headers() != nil && m.Headers().Get(connectors.EndHeader) != ""
		switch policy {
		case jetstream.AckExplicitPolicy:
			_ = m.Ack()
		case jetstream.AckAllPolicy:
			if end || (n.Load()+1)%int64(o.BatchSize) == 0 {
				_ = m.Ack()
			}
		}
		if end {
			close(done)
			return
		}
		n.Add(1)
	})
	if err != nil {
		return result{}, err
	}
	defer cc.Stop()
	return readCPU(turn{done: done, count: n.Load}.wait(ctx, start, false))(cpu)
}

// engineJetStream runs a query over the stored messages FROM JETSTREAM.
func engineJetStream(ctx context.Context, srv *natsserver.Server, sh shape, msgs [][]byte, turnNo int, o Options) (result, error) {
	return onStoredStream(ctx, srv, msgs, turnNo, func(nc *nats.Conn, _ jetstream.JetStream, _, subject string) (result, error) {
		start, cpu := time.Now(), bench.ProcessCPU()
		q := engineQuery(ctx, nc, sh, "JETSTREAM", subject, o)
		return readCPU(turn{done: q.done, count: q.rows.Load}.wait(ctx, start, false))(cpu)
	})
}

// onStoredStream stores msgs in a JetStream stream of this turn's own
// subject, runs a consumer's turn over it (timed from inside run, after
// the storing) and deletes the stream.
func onStoredStream(ctx context.Context, srv *natsserver.Server, msgs [][]byte, turnNo int,
	run func(nc *nats.Conn, js jetstream.JetStream, name, subject string) (result, error)) (result, error) {
	subject := fmt.Sprintf("bench.ingest.js.%d", turnNo)
	nc, err := srv.Connect()
	if err != nil {
		return result{}, err
	}
	defer nc.Close()
	js, name, err := storeJetStream(ctx, nc, subject, msgs)
	if err != nil {
		return result{}, err
	}
	defer js.DeleteStream(context.Background(), name)
	return run(nc, js, name, subject)
}

// readCPU gives a JetStream turn's result the process's CPU time since
// from: the read alone, not the storing before it.
func readCPU(r result, err error) func(from time.Duration) (result, error) {
	return func(from time.Duration) (result, error) {
		r.cpu = bench.ProcessCPU() - from
		return r, err
	}
}
