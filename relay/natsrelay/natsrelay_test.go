package natsrelay

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/relay/frame"

	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/relay/relaytest"
)

// startServer runs an embedded server with a small max payload, so the
// suite's large batches cross as many chunks.
func startServer(t testing.TB, maxPayload int32) *natsserver.Server {
	t.Helper()
	s, err := natsserver.Start(natsserver.Options{MaxPayload: maxPayload})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

func connect(t testing.TB, s *natsserver.Server) *nats.Conn {
	t.Helper()
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// openLink opens link l: its receiver on b, then its sender on a.
func openLink(ctx context.Context, t *testing.T, a, b *Transport, l relay.LinkID) (relay.Sender, relay.Receiver) {
	t.Helper()
	r, err := b.OpenReceiver(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	snd, err := a.OpenSender(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	return snd, r
}

func TestConformance(t *testing.T) {
	s := startServer(t, 64<<10)
	relaytest.Run(t, func(t *testing.T, cfg relay.Config) (relay.Transport, relay.Transport) {
		// Senders and receivers on separate connections, as on two workers.
		a := New(connect(t, s), Options{Config: cfg})
		b := New(connect(t, s), Options{Config: cfg})
		t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
		return a, b
	})
}

func TestChunking(t *testing.T) {
	s := startServer(t, 0)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const maxChunk = 4096
	a := New(connect(t, s), Options{Config: relay.Config{Allocator: mem}, MaxChunk: maxChunk})
	b := New(connect(t, s), Options{Config: relay.Config{Allocator: mem}})
	defer a.Close()
	defer b.Close()
	// Opening needs no deadline of the caller's (nats.go's flush does).
	snd, r := openLink(context.Background(), t, a, b, relay.LinkID{Query: "q", Edge: 1})
	bld := array.NewInt64Builder(mem)
	for i := 0; i < 100_000; i++ {
		bld.Append(int64(i) * 3)
	}
	col := bld.NewArray()
	bld.Release()
	rec := array.NewRecord(arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, -1)
	col.Release()
	defer rec.Release()
	if err := snd.SendData(ctx, 3, rec); err != nil {
		t.Fatal(err)
	}
	m, err := r.Recv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !array.RecordEqual(m.Record, rec) || m.Epoch != 3 {
		t.Fatalf("reassembled record differs (epoch %d)", m.Epoch)
	}
	m.Record.Release()
	ss, rs := snd.Stats(), r.Stats()
	// 800 KB of values in chunks of at most 4 KiB, each with its own header.
	minChunks := uint64(800_000 / maxChunk)
	if ss.Frames < minChunks || rs.Frames != ss.Frames || rs.Bytes != ss.Bytes || ss.Batches != 1 {
		t.Fatalf("sent %d frames / %d bytes, received %d / %d; want at least %d frames", ss.Frames, ss.Bytes, rs.Frames, rs.Bytes, minChunks)
	}
	if err := snd.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Recv(ctx); err != io.EOF {
		t.Fatalf("after close: %v, want io.EOF", err)
	}
}

// TestProtocolErrors publishes forged frames on a link's data subject: every
// one must end the link with ErrProtocol, never a panic or a silent skip. A
// gap (a message or a chunk missing) is asked for again; nobody sends it
// here, so the link ends with ErrLost once GapTimeout has passed.
func TestProtocolErrors(t *testing.T) {
	s := startServer(t, 0)
	l := relay.LinkID{Query: "q", Edge: 2, Sender: 1, Receiver: 2}
	hdr := func(kind frame.Kind, seq uint64) frame.Header {
		return frame.Header{Kind: kind, Query: l.Query, Edge: l.Edge, Sender: l.Sender, Receiver: l.Receiver, Seq: seq, Chunks: 1}
	}
	chunk := func(seq uint64, i, n uint32, total uint64, body []byte) []byte {
		h := hdr(frame.KindData, seq)
		h.Chunk, h.Chunks, h.Total = i, n, total
		return frame.Append(nil, h, body)
	}
	cases := map[string][][]byte{
		"garbage":        {[]byte("hello world")},
		"sequence gap":   {frame.Append(nil, hdr(frame.KindProgress, 2), nil)},
		"wrong link":     {frame.Append(nil, frame.Header{Kind: frame.KindProgress, Query: "other", Seq: 1, Chunks: 1}, nil)},
		"credit on data": {frame.Append(nil, frame.Header{Kind: frame.KindCredit, Query: l.Query, Edge: l.Edge, Sender: l.Sender, Receiver: l.Receiver, Chunks: 1, Total: frame.CreditLen}, frame.EncodeCredit(nil, frame.Credit{Messages: 1}))},
		"bad ipc":        {frame.Append(nil, func() frame.Header { h := hdr(frame.KindData, 1); h.Total = 4; return h }(), []byte{1, 2, 3, 4})},
		"chunk skipped":  {chunk(1, 0, 3, 9, []byte{1, 2, 3}), chunk(1, 2, 3, 9, []byte{1, 2, 3})},
		"chunk overrun":  {chunk(1, 0, 2, 4, []byte{1, 2, 3}), chunk(1, 1, 2, 4, []byte{1, 2})},
		"too big":        {chunk(1, 0, 2, 1<<40, []byte{1})},
		"frontier cut short": {frame.Append(nil, func() frame.Header {
			h := hdr(frame.KindData, 1)
			h.Flags, h.Total = frame.FlagFrontier, 4
			return h
		}(), []byte{1, 2, 3, 4})},
		"over credit": func() [][]byte {
			var out [][]byte
			for i := uint64(1); i <= 4; i++ {
				out = append(out, frame.Append(nil, hdr(frame.KindProgress, i), nil))
			}
			return out
		}(),
	}
	lost := map[string]bool{"sequence gap": true, "chunk skipped": true}
	for name, frames := range cases {
		t.Run(name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			tr := New(connect(t, s), Options{Config: relay.Config{Window: 2, Allocator: mem, MaxMessageBytes: 1 << 20}, GapTimeout: 300 * time.Millisecond})
			defer tr.Close()
			r, err := tr.OpenReceiver(ctx, l)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			nc := connect(t, s)
			data, _ := tr.Subjects(l)
			for _, f := range frames {
				if err := nc.Publish(data, f); err != nil {
					t.Fatal(err)
				}
			}
			if name == "over credit" {
				// Let all four arrive before reading, or reading frees credit.
				for r.Stats().Frames < 4 {
					if ctx.Err() != nil {
						t.Fatalf("frames never arrived: %+v", r.Stats())
					}
					time.Sleep(time.Millisecond)
				}
			}
			for {
				m, err := r.Recv(ctx)
				if err == nil {
					if m.Record != nil {
						m.Record.Release()
					}
					continue // the valid frames before the bad one
				}
				want := relay.ErrProtocol
				if lost[name] {
					want = relay.ErrLost
				}
				if !errors.Is(err, want) {
					t.Fatalf("err = %v, want %v", err, want)
				}
				break
			}
		})
	}
}
