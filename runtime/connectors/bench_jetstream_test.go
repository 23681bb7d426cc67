package connectors_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/runtime/connectors"
)

// BenchmarkJetStreamAcks reads 20,000 stored CSV readings through the
// JetStream source in turns: with an ephemeral consumer, whose batches are
// settled by one ack each (AckAll), and with a durable one, acknowledged
// one message at a time (AckExplicit). ackall_vs_explicit is the first's
// time over the second's in this process.
func BenchmarkJetStreamAcks(b *testing.B) {
	read := storedReadings(b, "acks.in")
	var all, explicit time.Duration
	for i := range b.N {
		all += read("")
		explicit += read(fmt.Sprintf("explicit%d", i))
	}
	b.ReportMetric(all.Seconds()/explicit.Seconds(), "ackall_vs_explicit")
}

// BenchmarkJetStreamConsume reads 20,000 stored CSV readings through the
// JetStream source's ephemeral consumer in turns: by Consume (what it
// does) and by a Fetch loop (what a durable consumer does).
// consume_vs_fetch is the first's time over the second's in this process.
func BenchmarkJetStreamConsume(b *testing.B) {
	read := storedReadings(b, "consume.in")
	defer connectors.SetReadByFetch(false)
	var consume, fetch time.Duration
	for range b.N {
		connectors.SetReadByFetch(false)
		consume += read("")
		connectors.SetReadByFetch(true)
		fetch += read("")
	}
	b.ReportMetric(consume.Seconds()/fetch.Seconds(), "consume_vs_fetch")
}

// storedReadings stores 20,000 CSV readings and an end marker on subject
// and returns a function that reads them all through a JetStream source
// (with durable as its consumer's name, or an ephemeral one) and says how
// long it took.
func storedReadings(b *testing.B, subject string) func(durable string) time.Duration {
	const n = 20_000
	nc := connect(b, startServer(b))
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: connectors.StreamName(subject), Subjects: []string{subject}}); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if _, err := js.PublishAsync(subject, fmt.Appendf(nil, "%d,2024-05-01 08:00:%02d,20.5,50", i, i%60)); err != nil {
			b.Fatal(err)
		}
		if i%1000 == 999 {
			<-js.PublishAsyncComplete()
		}
	}
	end := nats.NewMsg(subject)
	end.Header.Set(connectors.EndHeader, "1")
	if _, err := js.PublishMsg(ctx, end); err != nil {
		b.Fatal(err)
	}
	c, err := connectors.Builtins().Lookup(connectors.JetStream, "csv")
	if err != nil {
		b.Fatal(err)
	}
	mem := memory.NewGoAllocator()
	return func(durable string) time.Duration {
		mk, err := c.NewSource(connectors.SourceConfig{Conn: nc, Subject: subject, Schema: readingsSchema,
			Durable: durable, OnError: sources.Fail, EventTime: sources.EventTime{Column: -1}})
		if err != nil {
			b.Fatal(err)
		}
		out := newTextWriter()
		start := time.Now()
		if err := runSource(b, mem, mk, out, nil)(); err != nil {
			b.Fatal(err)
		}
		if got := out.Rows(); got != n {
			b.Fatalf("read %d rows of %d", got, n)
		}
		return time.Since(start)
	}
}
