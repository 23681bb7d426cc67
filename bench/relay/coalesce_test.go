package relay

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/relay/frame"
)

// rawIPCCoalesced is RawIPCThroughput with k batches to a message: what a
// relay that coalesced the batches it has ready into one NATS message (and
// split them at the receiver) would cost at best, with no protocol. Each
// batch's encoding goes behind its 4-byte length; the subscriber decodes
// every one. window counts batches, as RawIPCThroughput's does, so the two
// keep the same bytes in flight.
func rawIPCCoalesced(ctx context.Context, pub, sub *nats.Conn, mem memory.Allocator, rec arrow.Record, n, window, k int) (Throughput, error) {
	subj := fmt.Sprintf("bench.rawipck.%d", linkSeq.Add(1))
	var got, arrived atomic.Uint64
	var failed atomic.Pointer[error]
	done := make(chan struct{})
	var finish sync.Once
	moved := make(chan struct{}, 1)
	dec := frame.NewDecoder(mem)
	defer dec.Close()
	s, err := baselineSubscribe(ctx, sub, subj, moved, func(m *nats.Msg) {
		b := m.Data
		for len(b) >= 4 {
			l := int(binary.LittleEndian.Uint32(b))
			if l > len(b)-4 {
				err := fmt.Errorf("a batch of %d bytes in %d", l, len(b)-4)
				failed.CompareAndSwap(nil, &err)
				finish.Do(func() { close(done) })
				return
			}
			r, err := dec.Decode(b[4:4+l], got.Load() == 0)
			if err != nil {
				failed.CompareAndSwap(nil, &err)
				finish.Do(func() { close(done) })
				return
			}
			r.Release()
			b = b[4+l:]
			if got.Add(1) == uint64(n) {
				finish.Do(func() { close(done) })
			}
		}
		arrived.Add(uint64(len(m.Data)))
	})
	if err != nil {
		return Throughput{}, err
	}
	defer s.Unsubscribe()
	enc := frame.NewEncoder(mem)
	defer enc.Reset()
	var buf bytes.Buffer
	var lenb [4]byte
	cpu0, start := bench.ProcessCPU(), time.Now()
	for i := 0; i < n; {
		for uint64(i) >= uint64(window) && got.Load() < uint64(i-window+k) && failed.Load() == nil {
			select {
			case <-moved:
			case <-done:
			case <-ctx.Done():
				return Throughput{}, ctx.Err()
			}
		}
		buf.Reset()
		for j := 0; j < k && i < n; j, i = j+1, i+1 {
			at := buf.Len()
			buf.Write(lenb[:])
			if _, err := enc.Encode(&buf, rec); err != nil {
				return Throughput{}, err
			}
			binary.LittleEndian.PutUint32(buf.Bytes()[at:], uint32(buf.Len()-at-4))
		}
		if err := pub.Publish(subj, buf.Bytes()); err != nil {
			return Throughput{}, err
		}
	}
	if err := pub.FlushWithContext(ctx); err != nil {
		return Throughput{}, err
	}
	select {
	case <-done:
	case <-ctx.Done():
		return Throughput{}, fmt.Errorf("raw IPC publish, %d a message: %d of %d batches arrived: %w", k, got.Load(), n, ctx.Err())
	}
	if e := failed.Load(); e != nil {
		return Throughput{}, fmt.Errorf("raw IPC, %d a message: decode: %w", k, *e)
	}
	return Throughput{Batches: n, Bytes: arrived.Load(), Elapsed: time.Since(start), CPU: bench.ProcessCPU() - cpu0}, nil
}

// TestRawIPCCoalesced: every batch of a coalesced stream arrives and
// decodes, whole messages and a short last one alike.
func TestRawIPCCoalesced(t *testing.T) {
	env := benchEnv(t)
	rec := Record(memory.DefaultAllocator, 16)
	defer rec.Release()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, k := range []int{1, 3} {
		tp, err := rawIPCCoalesced(ctx, env.pub, env.sub, memory.DefaultAllocator, rec, 10, 4, k)
		if err != nil {
			t.Fatalf("k=%d: %v", k, err)
		}
		if tp.Batches != 10 || tp.Bytes == 0 {
			t.Errorf("k=%d: %+v", k, tp)
		}
	}
}

// BenchmarkRawIPCCoalesced is BenchmarkRawIPCNATS at 64 rows with k
// batches to a NATS message (k=1 is BenchmarkRawIPCNATS's stream): whether
// fewer, larger messages move the same batches for less (#30, relay49).
// The same batches are in flight at every k (117: the relay's 2 MiB
// window at 64 rows).
func BenchmarkRawIPCCoalesced(b *testing.B) {
	env := benchEnv(b)
	rec := Record(memory.DefaultAllocator, 64)
	defer rec.Release()
	for _, k := range []int{1, 2, 4, 8} {
		b.Run("k="+strconv.Itoa(k), func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			b.ResetTimer()
			tp, err := rawIPCCoalesced(ctx, env.pub, env.sub, memory.DefaultAllocator, rec, b.N, 117, k)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(tp.Bytes) / int64(tp.Batches))
			reportCPU(b, tp)
		})
	}
}

// BenchmarkRawNATSSize is BenchmarkRawNATS with messages of a quarter to
// eight times a 64-row batch's wire bytes and the same bytes in flight
// (the relay's 2 MiB window): what bare NATS itself costs per MB as its
// messages grow, the floor under any coalescing (#30, relay49).
func BenchmarkRawNATSSize(b *testing.B) {
	env := benchEnv(b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	batch := wireBytes(ctx, b, env, 64)
	for _, q := range []int{-4, -2, 1, 2, 4, 8} { // negative: a fraction
		size := batch * q
		if q < 0 {
			size = batch / -q
		}
		b.Run("bytes="+strconv.Itoa(size), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ResetTimer()
			tp, err := RawThroughput(ctx, env.pub, env.sub, size, b.N, max(1, 117*batch/size))
			if err != nil {
				b.Fatal(err)
			}
			reportCPU(b, tp)
		})
	}
}
