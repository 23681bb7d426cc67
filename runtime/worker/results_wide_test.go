package worker

import (
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/relay/frame"
	"github.com/tierflow/tierflow/relay/natsserver"
)

// TestResultsOfAWideRecordGoOutInPieces: a query's results record whose
// columns share one buffer (a projection of one column 2,000 times: 2,000
// columns' bytes from one column's) goes out in messages within the
// server's max payload, split before it is encoded, each piece encoded
// once (into a buffer of its size): before, the whole record was encoded
// first (125 MB of Go memory here, from a 64 KB column, in a buffer that
// grew by doubling), then halved and encoded again, level by level: this
// test's process allocated 1.25 GB sending it.
func TestResultsOfAWideRecordGoOutInPieces(t *testing.T) {
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	pub, err := natsserver.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	sub, err := natsserver.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	const rows, cols = 8192, 2000
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range rows {
		b.Append(int64(i))
	}
	col := b.NewArray()
	defer col.Release()
	fields, arrs := make([]arrow.Field, cols), make([]arrow.Array, cols)
	for i := range cols {
		fields[i], arrs[i] = arrow.Field{Name: fmt.Sprintf("c%d", i), Type: arrow.PrimitiveTypes.Int64}, col
	}
	rec := array.NewRecord(arrow.NewSchema(fields, nil), arrs, rows)
	defer rec.Release()

	var mu sync.Mutex
	var msgs, largest int
	s, err := sub.Subscribe("results.wide", func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		msgs++
		largest = max(largest, len(m.Data))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Unsubscribe()
	if err := sub.Flush(); err != nil {
		t.Fatal(err)
	}
	w := &results{conn: func() (*nats.Conn, error) { return pub, nil }, subject: "results.wide", mem: memory.DefaultAllocator}
	var encodes int
	var encoded int64
	defer func(e func(io.Writer, arrow.Record, memory.Allocator) error) { encodeRecord = e }(encodeRecord)
	encodeRecord = func(w io.Writer, rec arrow.Record, mem memory.Allocator) error {
		n := &countingWriter{w: w}
		err := frame.EncodeRecord(n, rec, mem)
		encodes++
		encoded += n.n
		return err
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := pub.Flush(); err != nil {
		t.Fatal(err)
	}
	whole := int64(rows * cols * 8)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := msgs
		mu.Unlock()
		if n >= encodes {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d messages of %d encoded after 10 s", n, encodes)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("a %d-column record of %d MB: %d messages, the largest %d bytes; %d encodings, %d MB encoded", cols, whole>>20, msgs, largest, encodes, encoded>>20)
	if int64(largest) > pub.MaxPayload() {
		t.Errorf("a message of %d bytes, over the max payload %d", largest, pub.MaxPayload())
	}
	if encodes != msgs || encoded > whole*11/10 {
		t.Errorf("%d encodings of %d MB for %d messages of a %d MB record, want each piece encoded once", encodes, encoded>>20, msgs, whole>>20)
	}
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
