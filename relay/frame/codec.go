package frame

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
)

// Encoder is the sending side of one link's Arrow IPC stream. The schema goes
// out with the first batch and again only when it changes, so a steady stream
// of small batches does not pay for building and parsing the schema each time.
// Not safe for concurrent use.
type Encoder struct {
	mem    memory.Allocator
	w      *ipc.Writer
	schema *arrow.Schema
	fast   bool // later batches of this schema may skip Arrow's writer
	fw     fastWriter
	out    switchWriter
}

type switchWriter struct{ w io.Writer }

func (s *switchWriter) Write(p []byte) (int, error) { return s.w.Write(p) }

// NewEncoder makes an encoder whose scratch allocations come from mem.
func NewEncoder(mem memory.Allocator) *Encoder { return &Encoder{mem: mem} }

// Encode appends the IPC encoding of rec to buf and reports whether the
// schema went with it (the frame must then carry FlagSchema).
func (e *Encoder) Encode(buf *bytes.Buffer, rec arrow.Record) (withSchema bool, err error) {
	if e.w == nil || (rec.Schema() != e.schema && !rec.Schema().Equal(e.schema)) {
		e.Reset()
		e.w = ipc.NewWriter(&e.out, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(e.mem))
		e.schema = rec.Schema()
		e.fast = schemaZeroCopyable(e.schema)
		withSchema = true
	} else if e.fast && appendRecordFast(buf, rec, &e.fw) {
		return false, nil
	}
	e.out.w = buf
	if err := e.w.Write(rec); err != nil {
		e.Reset()
		return false, fmt.Errorf("relay: encode record: %w", err)
	}
	return withSchema, nil
}

// Reset forgets the schema, so the next batch carries it again (after a
// failed send the receiver's state is unknown).
func (e *Encoder) Reset() {
	if e.w != nil {
		e.out.w = io.Discard
		_ = e.w.Close() // releases dictionaries it kept; the EOS goes nowhere
		e.w = nil
	}
	e.schema = nil
}

// Decoder is the receiving side of one link's Arrow IPC stream; it keeps the
// schema between batches. Any error leaves it needing a schema again. Not
// safe for concurrent use; Close it to release the last record it holds.
type Decoder struct {
	mem  memory.Allocator
	lim  limitAllocator
	feed bufMessageReader
	rdr  *ipc.Reader
	zc   *zcSchema // non-nil when the schema's layouts can be loaded in place
	// body, when mem is a Charger, frees a body decoded in place by
	// uncharging it: one value for every batch, not one each.
	body *bodyCharge
	// ZeroCopy lets records reference the body they were decoded from
	// (default true from NewDecoder). The body must then stay unchanged for as
	// long as the record lives; callers that reuse the body's memory turn it off.
	ZeroCopy bool
}

// NewDecoder makes a decoder whose records are allocated from mem.
func NewDecoder(mem memory.Allocator) *Decoder {
	d := &Decoder{mem: mem, lim: limitAllocator{mem: mem}, ZeroCopy: true}
	if ch, ok := mem.(Charger); ok {
		d.body = &bodyCharge{ch}
	}
	return d
}

// Decode decodes one data body. withSchema says the frame carries FlagSchema.
// With ZeroCopy the record's buffers may be slices of body (see zerocopy.go);
// otherwise they are copies in the decoder's allocator. Malformed input is an
// error wrapping ErrMalformed, and the Arrow reader's panics are recovered
// into one.
func (d *Decoder) Decode(body []byte, withSchema bool) (rec arrow.Record, err error) {
	defer func() {
		if p := recover(); p != nil {
			if rec != nil {
				rec.Release()
				rec = nil
			}
			err = fmt.Errorf("%w: arrow ipc: %v", ErrMalformed, p)
			if perr, ok := p.(error); ok && errors.Is(perr, dataflow.ErrMemory) {
				err = perr // the query's memory, not the frame
			}
		}
		if err != nil {
			d.Close()
		}
	}()
	// Every allocation for this body is bounded by what the body could hold:
	// forged lengths in the metadata must not allocate gigabytes.
	d.lim.left = int64(2*len(body)) + 1<<16
	if withSchema {
		d.Close()
		d.feed = bufMessageReader{buf: body}
		d.rdr, err = ipc.NewReaderFromMessageReader(&d.feed, ipc.WithAllocator(&d.lim))
		if err != nil {
			d.rdr = nil
			return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		d.zc = nil
		if schemaZeroCopyable(d.rdr.Schema()) {
			d.zc = newZCSchema(d.rdr.Schema())
		}
	} else {
		if d.rdr == nil {
			return nil, fmt.Errorf("%w: record batch before its schema", ErrMalformed)
		}
		d.feed.reset(body)
	}
	if d.zc != nil && d.ZeroCopy {
		rest := d.feed.buf[d.feed.off:]
		rec, used, ok, err := loadZeroCopy(d.zc, rest, d.body)
		if err != nil {
			return nil, err
		}
		if ok {
			if tail := rest[used:]; len(tail) != 0 && !isEOS(tail) {
				rec.Release()
				return nil, fmt.Errorf("%w: %d bytes after the record batch", ErrMalformed, len(tail))
			}
			return rec, nil
		}
	}
	if !d.rdr.Next() {
		if err := d.rdr.Err(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		return nil, fmt.Errorf("%w: data frame without a record batch", ErrMalformed)
	}
	rest := d.feed.buf[d.feed.off:]
	if len(rest) != 0 && !isEOS(rest) {
		return nil, fmt.Errorf("%w: %d bytes after the record batch", ErrMalformed, len(rest))
	}
	rec = d.rdr.Record()
	if d.zc != nil {
		for i, col := range rec.Columns() {
			if err := validateData(col.Data(), 0); err != nil {
				return nil, fmt.Errorf("%w: column %d: %w", ErrMalformed, i, err)
			}
		}
	}
	rec.Retain()
	return rec, nil
}

// Close releases the reader and the last record it holds.
func (d *Decoder) Close() {
	if d.rdr != nil {
		d.rdr.Release()
		d.rdr = nil
	}
}

// isEOS reports whether b is exactly an IPC end-of-stream marker, which
// EncodeRecord's self-contained bodies end with.
func isEOS(b []byte) bool {
	return bytes.Equal(b, []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
}
