package connectors

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
)

// natsInput is a core NATS subscription (in a queue group when one is
// named). Core NATS does not redeliver: what arrives while no instance is
// subscribed is gone, and beyond the pending limits the client drops
// messages (counted in Stats.Dropped) rather than grow without bound.
type natsInput struct {
	sub   *nats.Subscription
	stats *Stats
}

func newNATSInput(_ context.Context, c SourceConfig) (input, error) {
	var sub *nats.Subscription
	var err error
	if c.Queue != "" {
		sub, err = c.Conn.QueueSubscribeSync(c.Subject, c.Queue)
	} else {
		sub, err = c.Conn.SubscribeSync(c.Subject)
	}
	if err != nil {
		return nil, err
	}
	if err := sub.SetPendingLimits(c.PendingMsgs, c.PendingBytes); err != nil {
		sub.Unsubscribe()
		return nil, err
	}
	// The subscription exists on the server once it has seen it: a publish
	// right after Open must not be lost.
	if err := c.Conn.Flush(); err != nil {
		sub.Unsubscribe()
		return nil, err
	}
	return &natsInput{sub: sub, stats: c.Stats}, nil
}

func (n *natsInput) next(ctx context.Context) (message, error) {
	m, err := n.sub.NextMsgWithContext(ctx)
	if errors.Is(err, nats.ErrSlowConsumer) {
		// Reported once after drops; they are counted at close.
		m, err = n.sub.NextMsgWithContext(ctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			return message{}, ctx.Err()
		}
		return message{}, err
	}
	return message{data: m.Data, header: m.Header}, nil
}

func (n *natsInput) close() error {
	if d, err := n.sub.Dropped(); err == nil && d > 0 {
		n.stats.Dropped.Add(int64(d))
	}
	err := n.sub.Unsubscribe()
	if err == nats.ErrConnectionClosed || err == nats.ErrBadSubscription {
		return nil
	}
	return err
}
