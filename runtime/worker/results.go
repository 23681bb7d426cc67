package worker

import (
	"bytes"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/relay/frame"
	"github.com/tierflow/tierflow/runtime/connectors"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// results is the sink writer of a submitted SELECT: every batch goes to the
// client as one Arrow IPC stream on the query's results subject.
type results struct {
	nc      *nats.Conn
	subject string
	mem     memory.Allocator
	rows    atomic.Int64
}

func (r *results) Write(rec arrow.Record) error {
	var buf bytes.Buffer
	if err := frame.EncodeRecord(&buf, rec, r.mem); err != nil {
		return err
	}
	// Stay well below the server's max payload; halve what does not fit.
	if limit := r.nc.MaxPayload() - 4096; int64(buf.Len()) > limit && rec.NumRows() > 1 {
		half := rec.NumRows() / 2
		for _, s := range [][2]int64{{0, half}, {half, rec.NumRows()}} {
			part := rec.NewSlice(s[0], s[1])
			err := r.Write(part)
			part.Release()
			if err != nil {
				return err
			}
		}
		return nil
	}
	// A single row over the limit goes in chunks the client puts together.
	for _, m := range connectors.Chunks(r.subject, buf.Bytes(), int(r.nc.MaxPayload())) {
		if err := r.nc.PublishMsg(m); err != nil {
			return fmt.Errorf("results of %s: %w", r.subject, err)
		}
	}
	r.rows.Add(rec.NumRows())
	return nil
}

// Close is a no-op: the worker ends the stream itself (end), once its
// dataflow has finished, whether or not a sink instance ran here.
func (r *results) Close() error { return nil }

// end publishes the end marker with the number of rows sent.
func (r *results) end() error {
	m := nats.NewMsg(r.subject)
	m.Header.Set(deploy.HeaderEnd, strconv.FormatInt(r.rows.Load(), 10))
	if err := r.nc.PublishMsg(m); err != nil {
		return err
	}
	return r.nc.Flush()
}
