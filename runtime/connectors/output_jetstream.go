package connectors

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tierflow/tierflow/dataflow"
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
	// epoch is the epoch of the record being written (WriteEpoch; ids
	// only then); seen counts each (epoch, content) written so far, so
	// that equal results of one epoch get ids of their own.
	epoch  dataflow.Epoch
	withID bool
	seen   map[msgKey]int
	// fronts are the sink instances' frontiers (Commit), by instance; an
	// instance that wrote but never committed is at 0.
	fronts map[int]dataflow.Epoch
}

type msgKey struct {
	epoch dataflow.Epoch
	sum   [sha256.Size]byte
}

// WriteEpoch implements sinks.EpochWriter: with an IDPrefix each message
// gets an id from the epoch and its content (and how many equal ones the
// epoch had before), the same in every generation that writes it.
func (j *jetstreamOutput) WriteEpoch(instance int, epoch dataflow.Epoch, rec arrow.Record) error {
	if j.fronts == nil {
		j.fronts = map[int]dataflow.Epoch{}
	}
	if _, ok := j.fronts[instance]; !ok {
		j.fronts[instance] = 0
	}
	j.epoch, j.withID = epoch, j.c.IDPrefix != ""
	defer func() { j.withID = false }()
	return j.Write(rec)
}

// Commit implements sinks.EpochWriter: the counts of epochs below every
// instance's frontier are done with (no instance writes there again). It
// returns once the stream has acknowledged everything written so far, so
// a frontier reported as committed is in the stream.
func (j *jetstreamOutput) Commit(instance int, frontier dataflow.Epoch) error {
	if j.fronts == nil {
		j.fronts = map[int]dataflow.Epoch{}
	}
	j.fronts[instance] = frontier
	low := frontier
	for _, f := range j.fronts {
		low = min(low, f)
	}
	for k := range j.seen {
		if k.epoch < low {
			delete(j.seen, k)
		}
	}
	return j.wait(0)
}

// msgID is the id of a message of content b at the current epoch.
func (j *jetstreamOutput) msgID(b []byte) string {
	k := msgKey{epoch: j.epoch, sum: sha256.Sum256(b)}
	if j.seen == nil {
		j.seen = map[msgKey]int{}
	}
	n := j.seen[k]
	j.seen[k] = n + 1
	return fmt.Sprintf("%s.%d.%s.%d", j.c.IDPrefix, j.epoch, hex.EncodeToString(k.sum[:12]), n)
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
	name := c.Stream
	if name == "" {
		name = c.Streams[c.Subject]
	}
	if _, err := streamFor(ctx, js, name, c.Subject, StreamBound{}); err != nil {
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
		id := ""
		if j.withID {
			id = j.msgID(b)
		}
		for i, m := range Chunks(j.c.Subject, b, int(j.c.Conn.MaxPayload())) {
			if id != "" {
				if m.Header == nil {
					m.Header = nats.Header{}
				}
				m.Header.Set(jetstream.MsgIDHeader, id+"."+strconv.Itoa(i))
			}
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
