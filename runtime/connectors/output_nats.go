package connectors

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/nats-io/nats.go"
)

func (c *SinkConfig) defaults() error {
	if c.Conn == nil {
		return fmt.Errorf("%w: no NATS connection", ErrConfig)
	}
	if c.Subject == "" {
		return fmt.Errorf("%w: no subject", ErrConfig)
	}
	if c.Window <= 0 {
		c.Window = 256
	}
	if c.Stats == nil {
		c.Stats = &Stats{}
	}
	return nil
}

// natsOutput publishes on a core NATS subject: at most once, no acks. The
// client's buffer absorbs bursts; Close flushes to the server.
type natsOutput struct {
	c SinkConfig
	f format
}

func newNATSOutput(c SinkConfig, f format) (*natsOutput, error) {
	if err := c.defaults(); err != nil {
		return nil, err
	}
	return &natsOutput{c: c, f: f}, nil
}

func (n *natsOutput) Write(rec arrow.Record) error {
	return n.f.encode(rec, int(n.c.Conn.MaxPayload()), func(b []byte) error {
		n.c.Stats.Messages.Add(1)
		n.c.Stats.Bytes.Add(int64(len(b)))
		return n.c.Conn.Publish(n.c.Subject, b)
	})
}

func (n *natsOutput) Close() error {
	if n.c.End {
		m := nats.NewMsg(n.c.Subject)
		m.Header.Set(EndHeader, "1")
		if err := n.c.Conn.PublishMsg(m); err != nil {
			return err
		}
	}
	return n.c.Conn.Flush()
}
