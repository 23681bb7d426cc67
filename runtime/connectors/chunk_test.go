package connectors_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/connectors"
)

var textSchema = arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)

// TestRowOverMaxPayloadCrossesInChunks: on a server with a 4 KB max
// payload, a result row of 20 KB goes out in chunks in every format, even
// under --on-error skip, and a tierflow source puts it back together; a
// reader whose budget is smaller drops it as oversized (counted) under
// skip, and fails under fail.
func TestRowOverMaxPayloadCrossesInChunks(t *testing.T) {
	s, err := natsserver.Start(natsserver.Options{MaxPayload: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	big := strings.Repeat("x", 20000)
	for _, format := range []string{"json", "csv", "arrow"} {
		for _, tc := range []struct {
			name   string
			budget int
			policy sources.OnError
			want   string
		}{
			{"whole", 0, sources.Skip, "s\na\n" + big + "\nb\n"},
			{"over budget skip", 8000, sources.Skip, "s\na\nb\n"},
			{"over budget fail", 8000, sources.Fail, ""},
		} {
			t.Run(format+"/"+tc.name, func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				c, err := connectors.Builtins().Lookup(connectors.NATS, format)
				if err != nil {
					t.Fatal(err)
				}
				subject := fmt.Sprintf("big.%s.%d.%d", format, tc.budget, tc.policy)
				nc := connect(t, s)
				report := &sources.Report{}
				mk, err := c.NewSource(connectors.SourceConfig{Conn: nc, Subject: subject, Schema: textSchema, OnError: tc.policy, Report: report,
					MaxMessageBytes: tc.budget, EventTime: sources.EventTime{Column: -1}})
				if err != nil {
					t.Fatal(err)
				}
				out := newTextWriter()
				wait := runSource(t, mem, mk, out, nil)
				waitSubscribed(t, s, nc, connectors.NATS, subject)
				w, err := c.NewSink(connectors.SinkConfig{Conn: connect(t, s), Subject: subject, End: true})
				if err != nil {
					t.Fatal(err)
				}
				// One row per record, so each is its own message.
				for _, v := range []string{"a", big, "b"} {
					b := array.NewStringBuilder(mem)
					b.Append(v)
					col := b.NewArray()
					b.Release()
					rec := array.NewRecord(textSchema, []arrow.Array{col}, 1)
					col.Release()
					err := w.Write(rec)
					rec.Release()
					if err != nil {
						t.Fatalf("writing a %d-byte row: %v", len(v), err)
					}
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				err = wait()
				if tc.policy == sources.Fail && tc.budget > 0 {
					if !errors.Is(err, connectors.ErrTooLarge) {
						t.Fatalf("an oversized message under fail: %v", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if got := out.String(); got != tc.want {
					t.Fatalf("got %.80q, want %.80q", got, tc.want)
				}
				wantDrops := int64(0)
				if tc.budget > 0 {
					wantDrops = 1
				}
				if d := report.Drops.Snapshot()[dataflow.DropOversized]; d != wantDrops {
					t.Fatalf("%d oversized drops, want %d", d, wantDrops)
				}
			})
		}
	}
}

// Chunks of messages in progress are charged to the query's memory: first
// chunks of messages never finished (each under the message limit) fail
// the query for its memory instead of growing the worker, and a message
// put back together, or dropped, holds nothing more.
func TestChunksInProgressAreCharged(t *testing.T) {
	budget := dataflow.NewMemory("query q", 1<<20, nil)
	defer budget.Close()
	ch := budget.Allocator(memory.NewGoAllocator()).(dataflow.Charger)
	asm := connectors.Assembler{Limit: 1 << 20, Charger: ch}
	chunk := func(id string, i, n int) nats.Header {
		h := nats.Header{}
		h.Set(connectors.ChunkHeader, fmt.Sprintf("%d/%d", i, n))
		h.Set(connectors.ChunkIDHeader, id)
		return h
	}
	data := make([]byte, 64<<10)
	// One message in two chunks: charged while in progress, not after.
	if _, done, err := asm.Add(chunk("a", 0, 2), data); err != nil || done {
		t.Fatalf("first chunk: %v %v", done, err)
	}
	if budget.Used() < int64(len(data)) {
		t.Errorf("a chunk in progress holds %d bytes of the query's memory, want %d", budget.Used(), len(data))
	}
	if whole, done, err := asm.Add(chunk("a", 1, 2), data); err != nil || !done || len(whole) != 2*len(data) {
		t.Fatalf("last chunk: %d bytes %v %v", len(whole), done, err)
	}
	if budget.Used() != 0 {
		t.Errorf("after the message was whole the chunks still hold %d bytes", budget.Used())
	}
	// First chunks of messages that never end: the query's limit ends it.
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, _, err = asm.Add(chunk(fmt.Sprintf("m%d", i), 0, 1000), data)
	}
	if !errors.Is(err, dataflow.ErrMemory) {
		t.Fatalf("100 unfinished messages of 64 KiB under a 1 MiB limit: %v, want the query's memory limit", err)
	}
	if budget.Used() > 1<<20 {
		t.Errorf("the chunks hold %d bytes, past the 1 MiB limit", budget.Used())
	}
	asm.Release()
	if budget.Used() != 0 {
		t.Errorf("after Release the chunks still hold %d bytes", budget.Used())
	}
}
