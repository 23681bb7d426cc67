package natsrelay

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/relay/frame"
)

// The default window is sized by bytes: small messages get up to
// MaxWindow of credit, so a stream of them costs a grant per megabyte
// instead of one per 16 messages, while large messages keep Window (the
// bytes in flight stay bounded) and a Window set explicitly stays fixed.
// Grants are counted where the receiver publishes them; they follow from
// what the consumer takes, not from timing, and Retry is longer than the
// test so that no hello asks for one.
func TestWindowSizedByBytes(t *testing.T) {
	cases := []struct {
		name             string
		window, size, n  int
		minGrant, maxGrt int // grants for n messages
	}{
		// 4 KiB: 2 MiB make 512, capped at 256 (a grant per 128).
		{"small default", 0, 4 << 10, 1024, 4, 20},
		// 256 KiB: 2 MiB make 8, so the floor of 32 (a grant per 16).
		{"large default", 0, 256 << 10, 160, 160 / 16, 160/16 + 8},
		{"small explicit 32", 32, 4 << 10, 1024, 1024 / 16, 1024/16 + 8},
	}
	s := startServer(t, 0)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			o := Options{Config: relay.Config{Allocator: mem, Window: c.window}, Retry: time.Minute, AckTimeout: time.Minute}
			a, b := New(connect(t, s), o), New(connect(t, s), o)
			defer a.Close()
			defer b.Close()
			var grants atomic.Int64
			b.drop = func(p []byte) bool {
				if h, _, err := frame.Decode(p); err == nil && h.Kind == frame.KindCredit {
					grants.Add(1)
				}
				return false
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			// A link of its own: the last case's receiver may still be
			// closing, and its close frame would end this sender.
			link := relay.LinkID{Query: "w", Edge: uint32(i + 1)}
			snd, r := openLink(ctx, t, a, b, link)
			defer r.Close()
			rec := bytesRecord(mem, c.size)
			defer rec.Release()
			sent := make(chan error, 1)
			go func() {
				for i := 0; i < c.n; i++ {
					if err := snd.SendData(ctx, 1, rec); err != nil {
						sent <- err
						return
					}
				}
				sent <- nil
			}()
			for i := 0; i < c.n; i++ {
				m, err := r.Recv(ctx)
				if err != nil {
					t.Fatalf("message %d: %v", i+1, err)
				}
				if m.Record != nil {
					m.Record.Release()
				}
			}
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			if err := relay.CloseSender(ctx, snd); err != nil {
				t.Fatal(err)
			}
			got := int(grants.Load())
			st := r.Stats()
			t.Logf("%d messages of %d bytes, window %d: %d grants, at most %d buffered (%d bytes)", c.n, c.size, c.window, got, st.MaxBuffered, st.MaxBufferedBytes)
			if got < c.minGrant || got > c.maxGrt {
				t.Errorf("%d messages of %d bytes, window %d: %d grants, want %d to %d", c.n, c.size, c.window, got, c.minGrant, c.maxGrt)
			}
			if limit := int64(max(c.window, relay.DefaultMaxWindow)); st.MaxBuffered > limit {
				t.Errorf("receiver buffered %d messages, more than the largest window %d", st.MaxBuffered, limit)
			}
		})
	}
}

// After small messages have grown the window, a sender that goes on to
// large ones puts at most the byte window of them in flight, not the
// messages granted for the small ones; a Window set explicitly has no
// byte bound. The receiver's consumer stops, so what is buffered there
// is what was in flight: the sender stalls on credit, and once it has
// sent nothing for a while every message it sent has arrived. A machine
// too busy to send within that while can only make the count smaller.
func TestByteWindowBoundsLargeAfterSmall(t *testing.T) {
	cases := []struct {
		name           string
		window         int
		maxMsgs        int64 // large messages buffered at most
		minMsgs        int64
		small, smallMB int
	}{
		// 2 MiB of 64 KiB is 32, plus the one that starts within the grant.
		{"grown window", 0, 2<<20/(64<<10) + 1, 16, 600, 4 << 10},
		// A fixed window counts messages only: all 40 of its credit.
		{"explicit 40", 40, 40, 40, 0, 0},
	}
	s := startServer(t, 0)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			o := Options{Config: relay.Config{Allocator: mem, Window: c.window}, Retry: time.Minute, AckTimeout: time.Minute}
			a, b := New(connect(t, s), o), New(connect(t, s), o)
			defer a.Close()
			defer b.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			snd, r := openLink(ctx, t, a, b, relay.LinkID{Query: "bw", Edge: uint32(i + 1)})
			defer r.Close()
			small, large := bytesRecord(mem, c.smallMB), bytesRecord(mem, 64<<10)
			defer small.Release()
			defer large.Release()
			const nLarge = 300
			var sent atomic.Int64
			done := make(chan error, 1)
			go func() {
				for i := 0; i < c.small+nLarge; i++ {
					rec := large
					if i < c.small {
						rec = small
					}
					if err := snd.SendData(ctx, 1, rec); err != nil {
						done <- err
						return
					}
					sent.Add(1)
				}
				done <- nil
			}()
			for i := 0; i < c.small; i++ {
				m, err := r.Recv(ctx)
				if err != nil {
					t.Fatalf("small message %d: %v", i+1, err)
				}
				m.Record.Release()
			}
			// Wait until the sender has sent nothing for half a second and
			// all it sent is here.
			last, since := sent.Load(), time.Now()
			waitFor(t, 30*time.Second, func() bool {
				if n := sent.Load(); n != last {
					last, since = n, time.Now()
				}
				return time.Since(since) > 500*time.Millisecond && r.Stats().Buffered == last-int64(c.small)
			})
			st := r.Stats()
			t.Logf("window %d: %d large messages in flight (%d bytes) after %d small", c.window, st.Buffered, st.MaxBufferedBytes, c.small)
			if st.Buffered > c.maxMsgs || st.Buffered < c.minMsgs {
				t.Errorf("%d large messages in flight, want %d to %d", st.Buffered, c.minMsgs, c.maxMsgs)
			}
			// The rest flows as the consumer takes them.
			for i := 0; i < nLarge; i++ {
				m, err := r.Recv(ctx)
				if err != nil {
					t.Fatalf("large message %d: %v", i+1, err)
				}
				m.Record.Release()
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if err := relay.CloseSender(ctx, snd); err != nil {
				t.Fatal(err)
			}
		})
	}
}
