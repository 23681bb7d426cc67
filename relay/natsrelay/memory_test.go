package natsrelay

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/pixels"
	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/relay/frame"
)

// frameRecord is one camera frame (320x240 raw RGB pixels, 225 KiB) in a
// BLOB column: more than three times the test server's max payload.
func frameRecord(t *testing.T) arrow.Record {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 320, 240))
	for y := range 240 {
		for x := range 320 {
			img.Set(x, y, color.RGBA{R: uint8(x), G: uint8(y), B: uint8(x ^ y), A: 255})
		}
	}
	raw, _ := pixels.AppendRaw(nil, img, img.Rect, nil)
	b := array.NewBinaryBuilder(memory.NewGoAllocator(), arrow.BinaryTypes.Binary)
	b.Append(raw)
	col := b.NewArray()
	b.Release()
	defer col.Release()
	return array.NewRecord(arrow.NewSchema([]arrow.Field{{Name: "image", Type: arrow.BinaryTypes.Binary}}, nil), []arrow.Array{col}, 1)
}

// TestLargeFrameChunkedAndAccounted sends a frame larger than the NATS
// server's max payload: it crosses in chunks, comes out whole, and the
// receiving query's memory (dataflow.Memory) holds the message from its
// first chunk on, until the record is released; a budget without room
// for it fails the link with ErrMemory before the message is assembled.
func TestLargeFrameChunkedAndAccounted(t *testing.T) {
	const maxPayload = 64 << 10
	s := startServer(t, maxPayload)
	rec := frameRecord(t)
	defer rec.Release()
	size := len(rec.Column(0).(*array.Binary).Value(0))
	if size <= maxPayload {
		t.Fatalf("the frame is %d bytes, not over the max payload %d", size, maxPayload)
	}

	t.Run("whole", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		budget := dataflow.NewMemory("query q on worker w", 4<<20, nil)
		a := New(connect(t, s), Options{})
		b := New(connect(t, s), Options{Config: relay.Config{Allocator: budget.Allocator(memory.NewGoAllocator())}})
		defer a.Close()
		defer b.Close()
		snd, r := openLink(context.Background(), t, a, b, relay.LinkID{Query: "q", Edge: 1})
		if err := snd.SendData(ctx, 1, rec); err != nil {
			t.Fatal(err)
		}
		m, err := r.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !array.RecordEqual(m.Record, rec) {
			t.Fatal("the frame came out other than it went in")
		}
		if f := r.Stats().Frames; f < uint64(size/maxPayload)+1 {
			t.Fatalf("%d frames on the wire, want the frame in at least %d chunks", f, size/maxPayload+1)
		}
		if budget.Peak() < int64(size) || budget.Used() < int64(size) {
			t.Fatalf("the budget held %d (peak %d) with the frame's record out, want at least its %d bytes", budget.Used(), budget.Peak(), size)
		}
		m.Record.Release()
		if u := budget.Used(); u != 0 {
			t.Fatalf("the budget still holds %d bytes after the record's release", u)
		}
		_ = snd.Close()
	})

	t.Run("while assembling", func(t *testing.T) {
		// The first of three chunks of a 300 KB message, and no more: the
		// buffer the receiver made for the whole message is charged.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		budget := dataflow.NewMemory("query q on worker w", 4<<20, nil)
		l := relay.LinkID{Query: "q", Edge: 2, Sender: 1, Receiver: 2}
		tr := New(connect(t, s), Options{Config: relay.Config{Allocator: budget.Allocator(memory.NewGoAllocator())}})
		defer tr.Close()
		r, err := tr.OpenReceiver(ctx, l)
		if err != nil {
			t.Fatal(err)
		}
		const total = 300_000
		h := frame.Header{Kind: frame.KindData, Query: l.Query, Edge: l.Edge, Sender: l.Sender, Receiver: l.Receiver, Seq: 1, Chunk: 0, Chunks: 3, Total: total}
		data, _ := tr.Subjects(l)
		if err := connect(t, s).Publish(data, frame.Append(nil, h, bytes.Repeat([]byte{7}, 60_000))); err != nil {
			t.Fatal(err)
		}
		for budget.Used() < total {
			if ctx.Err() != nil {
				t.Fatalf("the budget holds %d bytes with a %d-byte message half-assembled", budget.Used(), total)
			}
			time.Sleep(2 * time.Millisecond)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if u := budget.Used(); u != 0 {
			t.Fatalf("the budget still holds %d bytes after the receiver closed", u)
		}
	})

	t.Run("over the limit", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		budget := dataflow.NewMemory("query q on worker w", 100<<10, nil)
		a := New(connect(t, s), Options{})
		b := New(connect(t, s), Options{Config: relay.Config{Allocator: budget.Allocator(memory.NewGoAllocator())}})
		defer a.Close()
		defer b.Close()
		snd, r := openLink(context.Background(), t, a, b, relay.LinkID{Query: "q", Edge: 3})
		_ = snd.SendData(ctx, 1, rec)
		_, err := r.Recv(ctx)
		_ = r.Close() // the sender stops waiting for an ack
		_ = snd.Close()
		var le *dataflow.LimitError
		if !errors.Is(err, dataflow.ErrMemory) || !errors.As(err, &le) || le.Want < int64(size) {
			t.Fatalf("err = %v, want the query's memory limit refusing the %d-byte frame", err, size)
		}
		if u := budget.Used(); u != 0 {
			t.Fatalf("the refused frame left %d bytes charged", u)
		}
	})
}
