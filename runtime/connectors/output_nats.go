package connectors

import (
	"fmt"
	"strings"

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
// client's buffer absorbs bursts; every Window messages it waits for the
// server to have taken them (a flush round trip), so a sender faster than
// the server slows down instead of piling up in memory; Close flushes.
type natsOutput struct {
	c       SinkConfig
	f       format
	unacked int // messages since the last flush
}

func newNATSOutput(c SinkConfig, f format) (*natsOutput, error) {
	if err := c.defaults(); err != nil {
		return nil, err
	}
	return &natsOutput{c: c, f: f}, nil
}

func (n *natsOutput) Write(rec arrow.Record) error {
	return n.f.encode(rec, int(n.c.Conn.MaxPayload()), func(b []byte) error {
		for _, m := range Chunks(n.c.Subject, b, int(n.c.Conn.MaxPayload())) {
			n.c.Stats.Messages.Add(1)
			n.c.Stats.Bytes.Add(int64(len(m.Data)))
			if err := n.c.Conn.PublishMsg(m); err != nil {
				return err
			}
			if n.unacked++; n.unacked >= n.c.Window {
				n.unacked = 0
				if err := n.c.Conn.Flush(); err != nil {
					return err
				}
			}
		}
		return nil
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

// Fail ends the subject with a failure marker instead of the end marker
// (when the sink marks ends at all): readers must not take what came
// before for the whole result.
func (n *natsOutput) Fail(cause error) error {
	if n.c.End {
		if err := n.c.Conn.PublishMsg(failedMsg(n.c.Subject, cause)); err != nil {
			return err
		}
	}
	return n.c.Conn.Flush()
}

// failedMsg is the failure marker for subject: FailedHeader with cause's
// first line.
func failedMsg(subject string, cause error) *nats.Msg {
	m := nats.NewMsg(subject)
	reason, _, _ := strings.Cut(cause.Error(), "\n")
	if reason == "" {
		reason = "failed"
	}
	m.Header.Set(FailedHeader, reason)
	return m
}
