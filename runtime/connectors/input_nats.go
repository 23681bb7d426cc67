package connectors

import (
	"context"
	"errors"
	"sync"

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
//
// The drops are counted by a watcher of the subscription's status, not by
// the reader: nats.go reports ErrSlowConsumer to NextMsg only while the
// subscription is still marked slow, and the next message it manages to
// queue clears that mark. A run of drops that starts after NextMsg has
// checked the mark and ends before its next call is never reported to the
// reader (it was seen in CI: 19 of 20,000 messages neither read nor counted
// until the query closed). The status goes to SlowConsumer at the first drop
// of a run and back to Active when the run ends, both under the lock that
// counts the drops, so reading Dropped() at each change counts every run.
type natsInput struct {
	sub    *nats.Subscription
	stats  *Stats
	report *sources.Report
	stop   chan struct{} // closed by close: the watcher ends
	ended  chan struct{} // closed by the watcher as it ends

	mu      sync.Mutex
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
	n := &natsInput{sub: sub, stats: c.Stats, report: c.Report, stop: make(chan struct{}), ended: make(chan struct{})}
	go n.watch(sub.StatusChanged(nats.SubscriptionSlowConsumer, nats.SubscriptionActive))
	return n, nil
}

// watch counts the drops at each change of the subscription's status until
// close. The status channel holds 10 changes and nats.go skips one when it
// is full; then a change not yet read is still ahead, and the count read
// after it covers the skipped one.
func (n *natsInput) watch(changes <-chan nats.SubStatus) {
	defer close(n.ended)
	for {
		select {
		case _, ok := <-changes:
			if !ok {
				return
			}
			n.countDrops()
		case <-n.stop:
			return
		}
	}
}

func (n *natsInput) next(ctx context.Context) (message, error) {
	if queued, _, _ := n.sub.Pending(); queued == 0 {
		// Waiting for input is not the query's CPU time (dataflow.CPU).
		defer dataflow.Waiting(ctx)()
	}
	m, err := n.sub.NextMsgWithContext(ctx)
	for errors.Is(err, nats.ErrSlowConsumer) {
		// The watcher counts the drops; the reader may be told too.
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
	n.mu.Lock()
	defer n.mu.Unlock()
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
	close(n.stop)
	<-n.ended
	n.countDrops()
	err := n.sub.Unsubscribe()
	if err == nats.ErrConnectionClosed || err == nats.ErrBadSubscription {
		return nil
	}
	return err
}
