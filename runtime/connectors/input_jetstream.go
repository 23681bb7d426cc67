package connectors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// jetstreamInput is a pull consumer on a JetStream stream: durable when named
// (it resumes where it was acknowledged), ephemeral otherwise. Messages are
// acknowledged after their batch was emitted; MaxAckPending bounds how many
// the server hands out before that, which bounds memory.
type jetstreamInput struct {
	js      jetstream.JetStream
	stream  string
	name    string
	durable bool
	it      jetstream.MessagesContext
}

// streamFor finds the stream holding subject, or creates one over it.
func streamFor(ctx context.Context, js jetstream.JetStream, name, subject string) (string, error) {
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
		name = streamName(subject)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject}}); err != nil {
		return "", fmt.Errorf("create stream %s over %q: %w", name, subject, err)
	}
	return name, nil
}

// streamName derives a stream name from a subject (names may not hold . * >).
func streamName(subject string) string {
	return strings.NewReplacer(".", "_", "*", "ANY", ">", "ALL", " ", "_").Replace(strings.ToUpper(subject))
}

func newJetStreamInput(ctx context.Context, c SourceConfig) (input, error) {
	js, err := jetstream.New(c.Conn)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stream, err := streamFor(ctx, js, c.Stream, c.Subject)
	if err != nil {
		return nil, err
	}
	cc := jetstream.ConsumerConfig{Durable: c.Durable, AckPolicy: jetstream.AckExplicitPolicy,
		MaxAckPending: c.MaxAckPending, FilterSubject: c.Subject, DeliverPolicy: jetstream.DeliverAllPolicy}
	switch {
	case c.StartSeq > 0:
		cc.DeliverPolicy, cc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, c.StartSeq
	case c.DeliverNew:
		cc.DeliverPolicy = jetstream.DeliverNewPolicy
	}
	if c.Durable == "" {
		cc.InactiveThreshold = time.Minute
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, stream, cc)
	if err != nil {
		return nil, fmt.Errorf("consumer on stream %s: %w", stream, err)
	}
	pull := c.MaxRows
	if pull > c.MaxAckPending {
		pull = c.MaxAckPending
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(pull))
	if err != nil {
		return nil, err
	}
	return &jetstreamInput{js: js, stream: stream, name: cons.CachedInfo().Name, durable: c.Durable != "", it: it}, nil
}

func (j *jetstreamInput) next(ctx context.Context) (message, error) {
	m, err := j.it.Next(jetstream.NextContext(ctx))
	if err != nil {
		if ctx.Err() != nil {
			return message{}, ctx.Err()
		}
		return message{}, err
	}
	return message{data: m.Data(), header: m.Headers(), ack: m.Ack, term: m.Term}, nil
}

func (j *jetstreamInput) close() error {
	j.it.Stop()
	if !j.durable {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		// A failure is harmless: the server drops an idle ephemeral
		// consumer after InactiveThreshold.
		_ = j.js.DeleteConsumer(ctx, j.stream, j.name)
	}
	return nil
}
