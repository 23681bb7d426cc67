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

// DecodeRecord decodes a self-contained body produced by EncodeRecord (schema,
// batch, end of stream). It is the stateless form of Decoder.
func DecodeRecord(body []byte, mem memory.Allocator) (arrow.Record, error) {
	d := NewDecoder(mem)
	defer d.Close()
	rec, err := d.Decode(body, true)
	if err != nil {
		if rec != nil {
			rec.Release()
		}
		return nil, err
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

// bufMessageReader reads IPC messages out of one body without copying it; the
// Arrow reader copies each column buffer out into its allocator, so the
// record never references the body. At the end of the body it reports
// io.EOF, and reset feeds it the next body of the same stream.
type bufMessageReader struct {
	buf []byte
	off int
	msg *ipc.Message
}

func (r *bufMessageReader) reset(b []byte) {
	if r.msg != nil {
		r.msg.Release()
		r.msg = nil
	}
	r.buf, r.off = b, 0
}

const ipcContinuation = 0xFFFFFFFF

func (r *bufMessageReader) Message() (*ipc.Message, error) {
	if r.msg != nil {
		r.msg.Release()
		r.msg = nil
	}
	b := r.buf
	rest := b[r.off:]
	if len(rest) == 0 {
		return nil, io.EOF
	}
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
	r.msg = ipc.NewMessage(meta, memory.NewBufferBytes(b[off:off+int(bodyLen)]))
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
