package worker

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/internal/arrowx"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/relay/frame"
	"github.com/tierflow/tierflow/runtime/connectors"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// results is the sink writer of a submitted SELECT: every batch goes to the
// client as one Arrow IPC stream on the query's results subject, with its
// epoch, and every advance of a sink instance's input frontier as a commit
// marker, so that the client writes only complete epochs and none twice
// (deploy.HeaderEpoch and its neighbours).
type results struct {
	// conn is the connection the results go on: the part's data user when
	// the coordinator minted one (only it may publish the owner's results
	// subject on a secure cluster), the worker's own otherwise.
	conn    func() (*nats.Conn, error)
	subject string
	mem     memory.Allocator
	rows    atomic.Int64
	worker  string
	gen     int
	// sinks and sinkWorkers count the generation's sink instances and the
	// workers that hold them, for the client.
	sinks, sinkWorkers int

	mu        sync.Mutex
	frontiers map[sinkKey]dataflow.Epoch
}

// sinkKey names a sink instance of the part: sink 0 is the results to the
// client, 1, 2, ... the catalog sinks (INSERT INTO), in the order built.
type sinkKey struct{ sink, instance int }

var _ sinks.EpochWriter = (*results)(nil)

// epochHeaderRoom is room for the generation, sink and epoch headers
// within the max payload (beside the chunks' own).
const epochHeaderRoom = 512

func (r *results) header(m *nats.Msg, instance int) {
	m.Header.Set(deploy.HeaderGen, strconv.Itoa(r.gen))
	m.Header.Set(deploy.HeaderSink, r.worker+"/"+strconv.Itoa(instance))
	m.Header.Set(deploy.HeaderSinks, strconv.Itoa(r.sinks))
	m.Header.Set(deploy.HeaderSinkWorkers, strconv.Itoa(r.sinkWorkers))
}

// Write sends a batch with no epoch (epoch 0): only a writer without the
// sink operator in front calls it.
func (r *results) Write(rec arrow.Record) error { return r.WriteEpoch(0, 0, rec) }

// encodeRecord encodes a results message (a test counts the encodings).
var encodeRecord = frame.EncodeRecord

func (r *results) WriteEpoch(instance int, epoch dataflow.Epoch, rec arrow.Record) error {
	nc, err := r.conn()
	if err != nil {
		return fmt.Errorf("results of %s: %w", r.subject, err)
	}
	// Stay well below the server's max payload; halve what does not fit,
	// by its columns' bytes before it is encoded (the encoding is that
	// much Go memory no budget holds: a wide projection of one column,
	// 3,000 times, is 3,000 columns' bytes encoded from one column's
	// buffers, 98 MB a batch) and by its encoding after.
	// The estimate adds the schema and the batch's metadata, a few
	// hundred bytes a column: without them a piece estimated within the
	// limit encoded past it and was encoded again in halves.
	limit := nc.MaxPayload() - 4096
	size := arrowx.RecordBytes(rec) + int64(rec.NumCols())*256 + 4096
	halve := size > limit && rec.NumRows() > 1
	var buf bytes.Buffer
	if !halve {
		// Sized at once: grown as the encoder writes, the buffer
		// allocated several times the message.
		buf.Grow(int(min(size, limit+4096)))
		if err := encodeRecord(&buf, rec, r.mem); err != nil {
			return err
		}
		halve = int64(buf.Len()) > limit && rec.NumRows() > 1
	}
	if halve {
		buf = bytes.Buffer{} // not held while the halves go
		half := rec.NumRows() / 2
		for _, s := range [][2]int64{{0, half}, {half, rec.NumRows()}} {
			part := rec.NewSlice(s[0], s[1])
			err := r.WriteEpoch(instance, epoch, part)
			part.Release()
			if err != nil {
				return err
			}
		}
		return nil
	}
	// A single row over the limit goes in chunks the client puts together;
	// the epoch headers take room of their own.
	for _, m := range connectors.Chunks(r.subject, buf.Bytes(), int(nc.MaxPayload())-epochHeaderRoom) {
		if m.Header == nil {
			m.Header = nats.Header{}
		}
		r.header(m, instance)
		m.Header.Set(deploy.HeaderEpoch, strconv.FormatUint(uint64(epoch), 10))
		if err := nc.PublishMsg(m); err != nil {
			return fmt.Errorf("results of %s: %w", r.subject, err)
		}
	}
	r.rows.Add(rec.NumRows())
	return nil
}

// Commit tells the client that instance has sent every row below frontier.
func (r *results) Commit(instance int, frontier dataflow.Epoch) error {
	r.record(0, instance, frontier)
	nc, err := r.conn()
	if err != nil {
		return fmt.Errorf("results of %s: %w", r.subject, err)
	}
	m := nats.NewMsg(r.subject)
	r.header(m, instance)
	m.Header.Set(deploy.HeaderFrontier, strconv.FormatUint(uint64(frontier), 10))
	if err := nc.PublishMsg(m); err != nil {
		return fmt.Errorf("results of %s: %w", r.subject, err)
	}
	return nil
}

// record notes that an instance of sink has written every row below
// frontier: the worker reports the smallest as its committed epoch.
func (r *results) record(sink, instance int, frontier dataflow.Epoch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.frontiers == nil {
		r.frontiers = map[sinkKey]dataflow.Epoch{}
	}
	r.frontiers[sinkKey{sink, instance}] = frontier
}

// frontier is the smallest input frontier of the sink instances here
// (false until each of them has reported one), catalog sinks included.
func (r *results) frontier(instances int) (dataflow.Epoch, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if instances == 0 || len(r.frontiers) < instances {
		return 0, false
	}
	first := true
	var f dataflow.Epoch
	for _, e := range r.frontiers {
		if first || e < f {
			f, first = e, false
		}
	}
	return f, true
}

// Close is a no-op: the worker ends the stream itself (end), once its
// dataflow has finished, whether or not a sink instance ran here.
func (r *results) Close() error { return nil }

// end publishes the end marker with the number of rows sent.
func (r *results) end() error {
	nc, err := r.conn()
	if err != nil {
		return fmt.Errorf("results of %s: %w", r.subject, err)
	}
	m := nats.NewMsg(r.subject)
	r.header(m, -1)
	m.Header.Set(deploy.HeaderEnd, strconv.FormatInt(r.rows.Load(), 10))
	if err := nc.PublishMsg(m); err != nil {
		return err
	}
	return nc.Flush()
}
