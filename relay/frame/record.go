package frame

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// EncodeRecord writes rec to w as a complete Arrow IPC stream (schema, one
// record batch, end of stream). Every data frame carries its own schema so a
// receiver needs no state beyond the current message; the schema is a few
// hundred bytes against batches of kilobytes to megabytes.
func EncodeRecord(w io.Writer, rec arrow.Record, mem memory.Allocator) error {
	iw := ipc.NewWriter(w, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(mem))
	if err := iw.Write(rec); err != nil {
		_ = iw.Close()
		return fmt.Errorf("relay: encode record: %w", err)
	}
	if err := iw.Close(); err != nil {
		return fmt.Errorf("relay: encode record: %w", err)
	}
	return nil
}

// DecodeRecord decodes a data body produced by EncodeRecord. The record's
// buffers are slices of body (no copy): the record holds a reference to body
// and the caller keeps its own, to release as usual.
//
// Malformed input is an error wrapping ErrMalformed. The Arrow IPC reader
// trusts lengths inside its metadata, so the decoder bounds every allocation
// it makes by the body's size and turns any panic of the reader into an error.
func DecodeRecord(body *memory.Buffer, mem memory.Allocator) (rec arrow.Record, err error) {
	lim := &limitAllocator{mem: mem, left: int64(2*body.Len()) + 1<<16}
	var rdr *ipc.Reader
	defer func() {
		if p := recover(); p != nil {
			if rec != nil {
				rec.Release()
				rec = nil
			}
			err = fmt.Errorf("%w: arrow ipc: %v", ErrMalformed, p)
		}
		if rdr != nil {
			rdr.Release()
		}
	}()
	mr := &bufMessageReader{buf: body}
	defer mr.Release()
	rdr, err = ipc.NewReaderFromMessageReader(mr, ipc.WithAllocator(lim))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if !rdr.Next() {
		if err := rdr.Err(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		return nil, fmt.Errorf("%w: data frame without a record batch", ErrMalformed)
	}
	rec = rdr.Record()
	rec.Retain()
	if rdr.Next() {
		rec.Release()
		return nil, fmt.Errorf("%w: data frame with more than one record batch", ErrMalformed)
	}
	if err := rdr.Err(); err != nil {
		rec.Release()
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return rec, nil
}

// errAllocLimit is panicked (and recovered by DecodeRecord) when forged
// metadata asks for more memory than the frame could possibly need.
var errAllocLimit = errors.New("allocation beyond what the frame can hold")

type limitAllocator struct {
	mem  memory.Allocator
	left int64
}

func (a *limitAllocator) Allocate(size int) []byte {
	a.take(size)
	return a.mem.Allocate(size)
}

func (a *limitAllocator) Reallocate(size int, b []byte) []byte {
	if size > len(b) {
		a.take(size - len(b))
	}
	return a.mem.Reallocate(size, b)
}

func (a *limitAllocator) Free(b []byte) { a.mem.Free(b) }

func (a *limitAllocator) take(n int) {
	if n < 0 || int64(n) > a.left {
		panic(errAllocLimit)
	}
	a.left -= int64(n)
}

// bufMessageReader reads IPC messages out of one buffer without copying: the
// message bodies are slices of it, so the decoded record's columns point into
// the buffer the frame was reassembled in.
type bufMessageReader struct {
	buf *memory.Buffer
	off int
	msg *ipc.Message
}

const ipcContinuation = 0xFFFFFFFF

func (r *bufMessageReader) Message() (*ipc.Message, error) {
	if r.msg != nil {
		r.msg.Release()
		r.msg = nil
	}
	b := r.buf.Bytes()
	rest := b[r.off:]
	if len(rest) < 8 {
		return nil, fmt.Errorf("%w: arrow ipc stream ends inside a message prefix", ErrMalformed)
	}
	if binary.LittleEndian.Uint32(rest) != ipcContinuation {
		return nil, fmt.Errorf("%w: arrow ipc message without continuation marker", ErrMalformed)
	}
	mlen := binary.LittleEndian.Uint32(rest[4:])
	if mlen == 0 {
		return nil, io.EOF
	}
	if uint64(mlen) > uint64(len(rest)-8) {
		return nil, fmt.Errorf("%w: arrow ipc metadata of %d bytes, %d left", ErrMalformed, mlen, len(rest)-8)
	}
	if err := verifyMessage(rest[8 : 8+mlen]); err != nil {
		return nil, err
	}
	meta := memory.NewBufferBytes(rest[8 : 8+mlen])
	off := r.off + 8 + int(mlen)
	probe := ipc.NewMessage(meta, memory.NewBufferBytes(nil))
	bodyLen := probe.BodyLen()
	probe.Release()
	if bodyLen < 0 || bodyLen > int64(len(b)-off) {
		return nil, fmt.Errorf("%w: arrow ipc body of %d bytes, %d left", ErrMalformed, bodyLen, len(b)-off)
	}
	body := memory.SliceBuffer(r.buf, off, int(bodyLen))
	r.msg = ipc.NewMessage(meta, body)
	body.Release()
	r.off = off + int(bodyLen)
	return r.msg, nil
}

func (r *bufMessageReader) Retain() {}

func (r *bufMessageReader) Release() {
	if r.msg != nil {
		r.msg.Release()
		r.msg = nil
	}
}
