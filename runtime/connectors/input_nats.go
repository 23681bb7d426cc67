package connectors

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/sources"
)

// natsInput is a core NATS subscription (in a queue group when one is
// named). Core NATS does not redeliver: what arrives while no instance is
// subscribed is gone, and beyond the pending limits the client drops
// messages rather than grow without bound. Those are counted as they
// happen (Stats.Dropped and the query's slow_consumer drops), so a run's
// report always says how many messages it lost.
type natsInput struct {
	sub     *nats.Subscription
	stats   *Stats
	report  *sources.Report
	counted int // of sub.Dropped(), what was added to the counts
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
	return &natsInput{sub: sub, stats: c.Stats, report: c.Report}, nil
}

func (n *natsInput) next(ctx context.Context) (message, error) {
	if queued, _, _ := n.sub.Pending(); queued == 0 {
		// Waiting for input is not the query's CPU time (dataflow.CPU).
		defer dataflow.Waiting(ctx)()
	}
	m, err := n.sub.NextMsgWithContext(ctx)
	for errors.Is(err, nats.ErrSlowConsumer) {
		// The client says so once after each run of drops: count them now,
		// so a live report (SHOW QUERIES) has them too.
		n.countDrops()
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

// countDrops adds the subscription's drops since the last call.
func (n *natsInput) countDrops() {
	d, err := n.sub.Dropped()
	if err != nil || d <= n.counted {
		return
	}
	delta := int64(d - n.counted)
	n.counted = d
	n.stats.Dropped.Add(delta)
	if n.report != nil {
		n.report.Drops.Add(dataflow.DropSlowConsumer, delta)
	}
}

func (n *natsInput) close() error {
	n.countDrops()
	err := n.sub.Unsubscribe()
	if err == nats.ErrConnectionClosed || err == nats.ErrBadSubscription {
		return nil
	}
	return err
}
