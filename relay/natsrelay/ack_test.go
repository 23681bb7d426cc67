package natsrelay

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/relay/frame"
)

// Acks are cumulative and ride on the grants: a stream sent back to back
// is acknowledged by far fewer frames than messages, most of them grants
// (frame version 6), every message is acknowledged in the end, and a
// message that comes alone is acknowledged too, by an ack of its own or
// the grant its consumption brings. The ack timeout is longer than the
// test: a resend never brings an ack, so an ack that comes came of the
// rule.
func TestAcksAreCumulative(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := startServer(t, 0)
	o := Options{Config: relay.Config{Allocator: mem, Window: 32}, AckTimeout: time.Minute}
	a, b := New(connect(t, s), o), New(connect(t, s), o)
	defer a.Close()
	defer b.Close()
	link := relay.LinkID{Query: "q", Edge: 1}
	_, credit := a.Subjects(link)
	// The watcher counts ack frames on a connection of its own: it sees
	// them after the sender may have, so it is waited for by the last
	// message each ack covers (acks come in order).
	var acks, grantAcks, ackedTo atomic.Int64
	watch := connect(t, s)
	sub, err := watch.Subscribe(credit, func(m *nats.Msg) {
		h, _, err := frame.Decode(m.Data)
		switch {
		case err != nil || h.Seq == 0:
		case h.Kind == frame.KindAck:
			acks.Add(1)
		case h.Kind == frame.KindCredit:
			grantAcks.Add(1)
		default:
			return
		}
		if err == nil && int64(h.Seq) > ackedTo.Load() {
			ackedTo.Store(int64(h.Seq))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	snd, r := openLink(ctx, t, a, b, link)
	defer snd.Close()
	defer r.Close()
	go drainReceiver(ctx, r)
	rec := bytesRecord(mem, 64)
	defer rec.Release()
	const n = 2000
	for i := 0; i < n; i++ {
		if err := snd.SendData(ctx, 1, rec); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, func() bool { return ackedTo.Load() >= n })
	burst, grants := acks.Load(), grantAcks.Load()
	t.Logf("%d messages back to back: %d ack frames, %d grants that acknowledge", n, burst, grants)
	// A grant goes per half window consumed, each acknowledging; an ack
	// of its own at most per three quarters of a window waiting, or per
	// AckDelay while the receiver catches up (a loaded machine: more).
	if grants < n/32 {
		t.Errorf("%d messages back to back: %d grants acknowledged, want about one per half window (%d)", n, grants, n/16)
	}
	if burst >= n/4 {
		t.Errorf("%d messages back to back took %d ack frames besides the grants: want far fewer than one a message", n, burst)
	}
	// One message alone: acknowledged once or twice (its own ack, and
	// the grant its consumption may bring), not at the ack timeout nor
	// after more messages (none come).
	before := acks.Load() + grantAcks.Load()
	if err := snd.SendData(ctx, 1, rec); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool { return ackedTo.Load() >= n+1 })
	if got := acks.Load() + grantAcks.Load() - before; got < 1 || got > 2 {
		t.Errorf("a message alone: %d frames acknowledged it, want 1 or 2", got)
	}
}

// The receiver's measure of how long its worker keeps the link's batches
// rides on its next ack to the sender (relay.ResidenceReporter), the
// longest reported since the previous ack, once: the sender's LinkStats
// then has it among its residence measures, and a message received with
// nothing reported adds none. Each data message arrives stamped with when
// the receiver had it in whole.
func TestAcksCarryTheReceiversResidence(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := startServer(t, 0)
	o := Options{Config: relay.Config{Allocator: mem, Window: 32}, AckTimeout: time.Minute}
	a, b := New(connect(t, s), o), New(connect(t, s), o)
	defer a.Close()
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	snd, r := openLink(ctx, t, a, b, relay.LinkID{Query: "q", Edge: 1})
	defer snd.Close()
	defer r.Close()
	rr, ok := r.(relay.ResidenceReporter)
	if !ok {
		t.Fatalf("receiver %T reports no residence", r)
	}
	rec := bytesRecord(mem, 64)
	defer rec.Release()
	send := func() {
		t.Helper()
		before := time.Now().UnixNano()
		if err := snd.SendData(ctx, 1, rec); err != nil {
			t.Fatal(err)
		}
		m, err := r.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m.Record.Release()
		if m.Arrived < before || m.Arrived > time.Now().UnixNano() {
			t.Fatalf("arrival stamp %d outside the send (%d) and now", m.Arrived, before)
		}
	}
	send()
	rr.ReportResidence(20 * time.Millisecond)
	rr.ReportResidence(35 * time.Millisecond)
	rr.ReportResidence(10 * time.Millisecond)
	send()
	waitFor(t, 10*time.Second, func() bool { return snd.Stats().Acks >= 2 })
	send()
	waitFor(t, 10*time.Second, func() bool { return snd.Stats().Acks >= 3 })
	got := snd.Stats().Residence
	if len(got) != 1 || got[0] != 35*time.Millisecond {
		t.Fatalf("sender's residence measures %v, want the longest reported, once: [35ms]", got)
	}
}

// A message on the wire without its ack bounds the link's bandwidth now:
// had the link carried its bytes faster, the ack would be back. The sender's
// LinkStats has the bound (OverdueBps) while the ack is missing, falling as
// it waits, and none once everything is acknowledged.
func TestAMissingAckBoundsTheBandwidth(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	s := startServer(t, 0)
	// The link's end waits a moment, not the default, for the ack that
	// never comes.
	o := Options{Config: relay.Config{Allocator: mem, Window: 32}, AckTimeout: time.Minute, Linger: 100 * time.Millisecond}
	bconn := connect(t, s)
	a, b := New(connect(t, s), o), New(bconn, o)
	defer a.Close()
	defer b.Close()
	link := relay.LinkID{Query: "q", Edge: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	snd, r := openLink(ctx, t, a, b, link)
	defer snd.Close()
	defer r.Close()
	go drainReceiver(ctx, r)
	rec := bytesRecord(mem, 1024)
	defer rec.Release()
	if err := snd.SendData(ctx, 1, rec); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool { return snd.Stats().UnackedBytes == 0 })
	if got := snd.Stats().OverdueBps; got != 0 {
		t.Errorf("everything acknowledged: OverdueBps %v, want 0", got)
	}
	// The receiver goes away: the next message's ack never comes.
	bconn.Close()
	beforeSend := time.Now()
	if err := snd.SendData(ctx, 1, rec); err != nil {
		t.Fatal(err)
	}
	afterSend := time.Now()
	st := snd.Stats()
	n := float64(st.UnackedBytes)
	time.Sleep(200 * time.Millisecond)
	// The age the bound divides by is the message's, which began between
	// beforeSend and afterSend: on a busy machine the sleep and the send
	// take longer than asked, so the expected range comes from the clock,
	// not from the 200 ms asked for.
	readStart := time.Now()
	first := snd.Stats().OverdueBps
	readEnd := time.Now()
	time.Sleep(200 * time.Millisecond)
	second := snd.Stats().OverdueBps
	oldest, youngest := readEnd.Sub(beforeSend).Seconds(), readStart.Sub(afterSend).Seconds()
	t.Logf("%.0f bytes unacknowledged: overdue bound %.0f B/s after %.0f-%.0f ms, %.0f 200 ms later", n, first, youngest*1000, oldest*1000, second)
	// About n over the age (the base round trip taken out makes it a
	// little more).
	if first <= 0 || first > n/youngest*1.5 || first < n/oldest/1.5 {
		t.Errorf("after %.0f-%.0f ms: OverdueBps %.0f, want about %.0f-%.0f", youngest*1000, oldest*1000, first, n/oldest, n/youngest)
	}
	if second <= 0 || second >= first {
		t.Errorf("after 400 ms: OverdueBps %.0f, want under the %.0f of 200 ms", second, first)
	}
}

// A receiver of another frame version (one whose grants would not
// acknowledge) is refused by name on the sender's side too: a send
// waiting for credit fails with frame.ErrVersion instead of waiting for a
// grant it cannot read.
func TestSenderRefusesAnotherFrameVersion(t *testing.T) {
	s := startServer(t, 0)
	o := Options{Config: relay.Config{Window: 4}, Retry: 20 * time.Millisecond}
	a := New(connect(t, s), o)
	defer a.Close()
	link := relay.LinkID{Query: "q", Edge: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	snd, err := a.OpenSender(ctx, link)
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	_, credit := a.Subjects(link)
	old := connect(t, s)
	h := header(link, frame.KindCredit)
	h.Total = frame.CreditLen
	grant := frame.EncodeCredit(frame.Append(nil, h, nil), frame.Credit{Messages: 4})
	grant[2] = frame.Version - 1
	// The old receiver answers every hello until the sender gives up.
	sub, err := old.Subscribe(a.prefix+".>", func(m *nats.Msg) {
		if h, _, err := frame.Decode(m.Data); err == nil && h.Kind == frame.KindHello {
			_ = old.Publish(credit, grant)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := old.Flush(); err != nil {
		t.Fatal(err)
	}
	mem := memory.NewGoAllocator()
	rec := bytesRecord(mem, 64)
	defer rec.Release()
	err = snd.SendData(ctx, 1, rec)
	if !errors.Is(err, frame.ErrVersion) || !errors.Is(err, relay.ErrProtocol) {
		t.Fatalf("send to a receiver of frame version %d: %v, want frame.ErrVersion and relay.ErrProtocol", frame.Version-1, err)
	}
	t.Log(err)
}
