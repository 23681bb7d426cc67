package connectors

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jetstreamOutput publishes into a JetStream stream asynchronously with at
// most Window publishes awaiting their ack: the sink runs ahead of the
// server's acks but never unboundedly. Close waits for every ack; a refused
// publish fails the write that follows or Close.
type jetstreamOutput struct {
	c       SinkConfig
	f       format
	js      jetstream.JetStream
	pending []jetstream.PubAckFuture
}

func newJetStreamOutput(c SinkConfig, f format) (*jetstreamOutput, error) {
	if err := c.defaults(); err != nil {
		return nil, err
	}
	js, err := jetstream.New(c.Conn)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := streamFor(ctx, js, c.Stream, c.Subject); err != nil {
		return nil, err
	}
	return &jetstreamOutput{c: c, f: f, js: js}, nil
}

// ackTimeout bounds the wait for one publish's ack.
const ackTimeout = 10 * time.Second

func (j *jetstreamOutput) wait(keep int) error {
	for len(j.pending) > keep {
		f := j.pending[0]
		j.pending = j.pending[1:]
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return fmt.Errorf("jetstream publish to %q: %w", j.c.Subject, err)
		case <-time.After(ackTimeout):
			return fmt.Errorf("jetstream publish to %q: no ack after %s", j.c.Subject, ackTimeout)
		}
	}
	return nil
}

func (j *jetstreamOutput) publish(m *nats.Msg) error {
	if err := j.wait(j.c.Window - 1); err != nil {
		return err
	}
	f, err := j.js.PublishMsgAsync(m)
	if err != nil {
		return fmt.Errorf("jetstream publish to %q: %w", j.c.Subject, err)
	}
	j.pending = append(j.pending, f)
	return nil
}

func (j *jetstreamOutput) Write(rec arrow.Record) error {
	return j.f.encode(rec, int(j.c.Conn.MaxPayload()), func(b []byte) error {
		for _, m := range Chunks(j.c.Subject, b, int(j.c.Conn.MaxPayload())) {
			j.c.Stats.Messages.Add(1)
			j.c.Stats.Bytes.Add(int64(len(m.Data)))
			if err := j.publish(m); err != nil {
				return err
			}
		}
		return nil
	})
}

func (j *jetstreamOutput) Close() error {
	if j.c.End {
		m := nats.NewMsg(j.c.Subject)
		m.Header.Set(EndHeader, "1")
		if err := j.publish(m); err != nil {
			return err
		}
	}
	return j.wait(0)
}

// Fail ends the stream with a failure marker instead of the end marker.
func (j *jetstreamOutput) Fail(cause error) error {
	if j.c.End {
		if err := j.publish(failedMsg(j.c.Subject, cause)); err != nil {
			return err
		}
	}
	return j.wait(0)
}
