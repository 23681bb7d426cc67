package connectors

import (
	"context"
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
// Messages reach the reader through a handler and a msgQueue (a batch at a
// time), not NextMsg (one at a time).
//
// The drops are counted by a watcher of the subscription's status, not
// only by the reader: nats.go clears a subscription's slow-consumer mark
// when it manages to queue the next message, so a reader asking after a
// run of drops may not see it (it was seen in CI with NextMsg: 19 of 20,000
// messages neither read nor counted until the query closed). The status
// goes to SlowConsumer at the first drop of a run and back to Active when
// the next message is queued, both under the lock that counts the drops,
// so reading Dropped() at each change counts every run that ended. The
// drops of a run that has not ended (nothing was published after it) are
// counted by the reader each time it finds nothing left to read: a drop
// happens only while the subscription's buffer is full, so by then the
// reader has taken what that buffer held after the drop.
type natsInput struct {
	sub    *nats.Subscription
	q      *msgQueue[*nats.Msg]
	got    []*nats.Msg // taken from q, read up to taken
	taken  int
	stats  *Stats
	report *sources.Report
	stop   chan struct{} // closed by close: the watcher ends
	ended  chan struct{} // closed by the watcher as it ends

	mu      sync.Mutex
	counted int // of sub.Dropped(), what was added to the counts
}

func newNATSInput(_ context.Context, c SourceConfig) (input, error) {
	// The handler's queue holds a batch, in at most a quarter of the
	// subscription's pending bytes: beyond, the subscription buffers (and
	// drops past its limits, counted) as it did with nothing in front.
	n := &natsInput{stats: c.Stats, report: c.Report, stop: make(chan struct{}), ended: make(chan struct{})}
	q := newMsgQueue(c.MaxRows, c.PendingBytes/4, natsMsgSize, n.countDrops)
	var sub *nats.Subscription
	var err error
	if c.Queue != "" {
		sub, err = c.Conn.QueueSubscribe(c.Subject, c.Queue, q.put)
	} else {
		sub, err = c.Conn.Subscribe(c.Subject, q.put)
	}
	if err != nil {
		return nil, err
	}
	if err := sub.SetPendingLimits(c.PendingLimits()); err != nil {
		sub.Unsubscribe()
		return nil, err
	}
	// The subscription exists on the server once it has seen it: a publish
	// right after Open must not be lost.
	if err := c.Conn.Flush(); err != nil {
		sub.Unsubscribe()
		return nil, err
	}
	n.sub, n.q = sub, q
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
	if n.taken == len(n.got) {
		got, err := n.q.take(ctx, n.got)
		if err != nil {
			n.got, n.taken = n.got[:0], 0
			return message{}, err
		}
		n.got, n.taken = got, 0
	}
	m := n.got[n.taken]
	n.taken++
	return message{data: m.Data, header: m.Header}, nil
}

// natsPendingMsgBytes is what a message pending in a subscription holds
// beyond its payload: nats.go's Msg (a 128-byte allocation) and its copy of
// the subject. TestNATSPendingMessageOverhead measures it (130-140 bytes
// on a 20-byte subject).
const natsPendingMsgBytes = 160

// PendingLimits are the pending limits of a core subscription of c (its
// defaults applied): its PendingMsgs, or as many messages as PendingBytes
// holds of the client's bytes a message beside the payload, and
// PendingBytes. Why not a fixed count: the count bounds memory that the
// payload limit does not see (a message's Msg and subject), so it follows
// the same bytes, which a query's budget sets (sourceOp.Open). The fixed
// 65,536 was a quarter of what a subscription needs to ride out a
// 1,000,000-message burst from a publisher on the same 2 cores (bench
// ingest: the engine lost 3-26% of each burst, and its rate with them);
// nats.go's own default is 524,288.
func (c SourceConfig) PendingLimits() (msgs, bytes int) {
	if c.PendingBytes <= 0 {
		c.PendingBytes = defaultPendingBytes
	}
	if c.PendingMsgs > 0 {
		return c.PendingMsgs, c.PendingBytes
	}
	return max(c.PendingBytes/natsPendingMsgBytes, 1), c.PendingBytes
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
	n.q.close()
	n.countDrops()
	err := n.sub.Unsubscribe()
	if err == nats.ErrConnectionClosed || err == nats.ErrBadSubscription {
		return nil
	}
	return err
}
