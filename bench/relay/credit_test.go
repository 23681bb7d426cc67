package relay

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/bench"
)

// rawCredited is RawThroughput with its window kept as the relay keeps
// its own, and as the raw baseline across processes does
// (rawThroughputPeer): the subscriber publishes its frame count every
// window/2 messages on a subject of its own, and the publisher waits on
// what comes back over NATS, not on a counter it shares with the
// subscriber in this process (#30, relay49). perMsg must fit one message.
func rawCredited(ctx context.Context, pub, sub *nats.Conn, perMsg, n, window int) (Throughput, error) {
	subj := fmt.Sprintf("bench.rawcr.%d", linkSeq.Add(1))
	credit := subj + ".credit"
	window = max(1, window)
	every := uint64(max(1, window/2))
	var acked atomic.Uint64
	moved := make(chan struct{}, 1)
	cs, err := pub.Subscribe(credit, func(m *nats.Msg) {
		if len(m.Data) == 8 {
			if v := binary.BigEndian.Uint64(m.Data); v > acked.Load() {
				acked.Store(v)
			}
		}
		select {
		case moved <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return Throughput{}, err
	}
	defer func() { _ = cs.Unsubscribe() }()
	if err := pub.FlushWithContext(ctx); err != nil {
		return Throughput{}, err
	}
	total := uint64(perMsg) * uint64(n)
	var got, frames uint64 // the callback's alone: one runs at a time
	var cb [8]byte
	done := make(chan struct{})
	s, err := baselineSubscribe(ctx, sub, subj, make(chan struct{}, 1), func(m *nats.Msg) {
		got += uint64(len(m.Data))
		frames++
		if frames%every == 0 || got == total {
			binary.BigEndian.PutUint64(cb[:], frames)
			_ = sub.Publish(credit, cb[:])
		}
		if got == total {
			close(done)
		}
	})
	if err != nil {
		return Throughput{}, err
	}
	defer s.Unsubscribe()
	payload := make([]byte, perMsg)
	for i := range payload {
		payload[i] = byte(i)
	}
	cpu0, start := bench.ProcessCPU(), time.Now()
	for i := uint64(0); i < uint64(n); i++ {
		for i >= uint64(window) && acked.Load() < i-uint64(window)+1 {
			select {
			case <-moved:
			case <-ctx.Done():
				return Throughput{}, fmt.Errorf("raw publish, credit over NATS: %d of %d acknowledged: %w", acked.Load(), i, ctx.Err())
			}
		}
		if err := pub.Publish(subj, payload); err != nil {
			return Throughput{}, err
		}
	}
	if err := pub.FlushWithContext(ctx); err != nil {
		return Throughput{}, err
	}
	select {
	case <-done:
	case <-ctx.Done():
		return Throughput{}, fmt.Errorf("raw publish, credit over NATS: not all arrived: %w", ctx.Err())
	}
	return Throughput{Batches: n, Bytes: total, Elapsed: time.Since(start), CPU: bench.ProcessCPU() - cpu0}, nil
}

// TestRawCredited: every byte arrives, and a window smaller than the
// stream makes the publisher wait on the counts that come back (a count
// that never came would time it out).
func TestRawCredited(t *testing.T) {
	env := benchEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tp, err := rawCredited(ctx, env.pub, env.sub, 1000, 101, 4)
	if err != nil {
		t.Fatal(err)
	}
	if tp.Bytes != 101000 || tp.Batches != 101 {
		t.Errorf("%+v", tp)
	}
}

// BenchmarkRawNATSCredited is BenchmarkRawNATS at 64 rows with its window
// kept over NATS (rawCredited), beside BenchmarkRawNATS's counter in
// process, at raw's window (32) and the relay's (117 at 64 rows): what
// the in-process baseline's free flow control is worth against a relay
// whose credit crosses NATS.
func BenchmarkRawNATSCredited(b *testing.B) {
	env := benchEnv(b)
	rec := Record(memory.DefaultAllocator, 64)
	defer rec.Release()
	a, c := natsPair(env)
	defer a.Close()
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	probe, err := RelayThroughput(ctx, a, c, rec, 1)
	if err != nil {
		b.Fatal(err)
	}
	size := int(probe.Bytes)
	for _, w := range []int{32, 117} {
		for _, over := range []bool{false, true} {
			name := "window=" + strconv.Itoa(w) + "/counter"
			if over {
				name = "window=" + strconv.Itoa(w) + "/nats"
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(size))
				b.ResetTimer()
				var tp Throughput
				var err error
				if over {
					tp, err = rawCredited(ctx, env.pub, env.sub, size, b.N, w)
				} else {
					tp, err = RawThroughput(ctx, env.pub, env.sub, size, b.N, w)
				}
				if err != nil {
					b.Fatal(err)
				}
				reportCPU(b, tp)
			})
		}
	}
}
