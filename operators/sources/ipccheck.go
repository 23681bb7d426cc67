package sources

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow/go/v17/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"
)

// errIPCFraming: a message of an Arrow IPC stream or file claims more bytes
// than the file holds.
var errIPCFraming = errors.New("message lengths do not fit the file")

// ipcMagic opens and closes the IPC file format.
var ipcMagic = []byte("ARROW1")

// checkIPCFraming walks the messages of an Arrow IPC stream (or the stream
// inside an IPC file) and checks every length against the bytes there are,
// before arrow/go's reader allocates what a corrupt length says: up to 2 GiB
// for the metadata and any size for the body, an out-of-memory crash that no
// recover catches.
func checkIPCFraming(f io.ReaderAt, size int64) (err error) {
	defer func() {
		if p := recover(); p != nil { // flatbuffers on garbage
			err = fmt.Errorf("%w: %v", errIPCFraming, p)
		}
	}()
	off, end := int64(0), size
	head := make([]byte, 8)
	if n, _ := f.ReadAt(head, 0); n >= 6 && bytes.Equal(head[:6], ipcMagic) {
		tail := make([]byte, 10)
		if size < 8+10 {
			return fmt.Errorf("%w: %d bytes is too short for an IPC file", errIPCFraming, size)
		}
		if _, err := f.ReadAt(tail, size-10); err != nil {
			return err
		}
		if !bytes.Equal(tail[4:], ipcMagic) {
			return fmt.Errorf("%w: an IPC file without its closing magic (truncated?)", errIPCFraming)
		}
		footer := int64(int32(binary.LittleEndian.Uint32(tail)))
		if footer <= 0 || footer > size-18 {
			return fmt.Errorf("%w: footer of %d bytes", errIPCFraming, footer)
		}
		off, end = 8, size-10-footer
		buf := make([]byte, footer)
		if _, err := f.ReadAt(buf, end); err != nil {
			return err
		}
		if err := checkFooter(buf, end); err != nil {
			return err
		}
	}
	word := make([]byte, 4)
	for off+4 <= end {
		if _, err := f.ReadAt(word, off); err != nil {
			return err
		}
		n := int64(int32(binary.LittleEndian.Uint32(word)))
		off += 4
		if uint32(n) == 0xFFFFFFFF { // continuation marker, then the length
			if off+4 > end {
				return nil
			}
			if _, err := f.ReadAt(word, off); err != nil {
				return err
			}
			n = int64(int32(binary.LittleEndian.Uint32(word)))
			off += 4
		}
		switch {
		case n == 0:
			return nil // end of stream
		case n < 0 || n > end-off:
			return fmt.Errorf("%w: message metadata of %d bytes at offset %d, %d left", errIPCFraming, n, off, end-off)
		}
		meta := make([]byte, n)
		if _, err := f.ReadAt(meta, off); err != nil {
			return err
		}
		off += n
		if err := checkMessage(meta); err != nil {
			return fmt.Errorf("message at offset %d: %w", off-n, err)
		}
		body := messageBodyLength(meta)
		if body < 0 || body > end-off {
			return fmt.Errorf("%w: message body of %d bytes at offset %d, %d left", errIPCFraming, body, off, end-off)
		}
		off += body
	}
	return nil
}

// messageBodyLength reads Message.bodyLength (field 3: vtable slot 10) of
// the IPC flatbuffer schema.
func messageBodyLength(meta []byte) int64 {
	if len(meta) < 4 {
		return -1
	}
	t := flatbuffers.Table{Bytes: meta, Pos: flatbuffers.GetUOffsetT(meta)}
	if o := flatbuffers.UOffsetT(t.Offset(10)); o != 0 {
		return t.GetInt64(o + t.Pos)
	}
	return 0
}

// boundedAllocator refuses (with a panic the reader's guard turns into an
// error) an allocation larger than a corrupt file could justify, where
// arrow/go takes a buffer length from the file as it is.
type boundedAllocator struct {
	memory.Allocator
	max int
}

func (a boundedAllocator) Allocate(size int) []byte {
	if size > a.max {
		panic(fmt.Sprintf("a buffer of %d bytes in a file of this size", size))
	}
	return a.Allocator.Allocate(size)
}

func (a boundedAllocator) Reallocate(size int, b []byte) []byte {
	if size > a.max {
		panic(fmt.Sprintf("a buffer of %d bytes in a file of this size", size))
	}
	return a.Allocator.Reallocate(size, b)
}

// Wrapped is the allocator a bounds (dataflow.Wrapper): the query's
// budget, which sets how much its readers hold ahead.
func (a boundedAllocator) Wrapped() memory.Allocator { return a.Allocator }

// fileAllocator bounds mem for a file of size bytes: compressed buffers may
// grow when decompressed, so the bound is generous but finite.
func fileAllocator(mem memory.Allocator, size int64) memory.Allocator {
	return boundedAllocator{Allocator: mem, max: int(max(64*size, 64<<20))}
}

func fileSize(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// The IPC metadata are flatbuffers whose vector lengths arrow/go turns into
// allocations as they are (schemaFromFB makes a slice of "fields" of any
// length). fbCheck walks the tables arrow/go reads and refuses a vector that
// does not fit its buffer. Slots are the schema's field ids: 4 + 2*id.
type fbCheck struct {
	buf   []byte
	depth int
}

var errFlatbuffer = errors.New("IPC metadata do not fit their buffer")

// vector checks the vector at slot of t (elements of elem bytes) and
// returns its length and start.
func (c *fbCheck) vector(t *flatbuffers.Table, slot flatbuffers.VOffsetT, elem int) (int, flatbuffers.UOffsetT) {
	o := flatbuffers.UOffsetT(t.Offset(slot))
	if o == 0 {
		return 0, 0
	}
	start := t.Vector(o)
	n := t.VectorLen(o)
	if n < 0 || int(start) > len(c.buf) || n > (len(c.buf)-int(start))/elem {
		panic(errFlatbuffer)
	}
	return n, start
}

// table returns the table that the offset at pos points to.
func (c *fbCheck) table(pos flatbuffers.UOffsetT) *flatbuffers.Table {
	if int(pos)+4 > len(c.buf) {
		panic(errFlatbuffer)
	}
	at := pos + flatbuffers.GetUOffsetT(c.buf[pos:])
	if int(at)+4 > len(c.buf) {
		panic(errFlatbuffer)
	}
	return &flatbuffers.Table{Bytes: c.buf, Pos: at}
}

// tables checks a vector of tables at slot with check.
func (c *fbCheck) tables(t *flatbuffers.Table, slot flatbuffers.VOffsetT, check func(*flatbuffers.Table)) {
	n, start := c.vector(t, slot, 4)
	for i := 0; i < n; i++ {
		check(c.table(start + flatbuffers.UOffsetT(4*i)))
	}
}

func (c *fbCheck) sub(t *flatbuffers.Table, slot flatbuffers.VOffsetT) *flatbuffers.Table {
	o := flatbuffers.UOffsetT(t.Offset(slot))
	if o == 0 {
		return nil
	}
	return c.table(t.Pos + o)
}

func (c *fbCheck) keyValues(t *flatbuffers.Table, slot flatbuffers.VOffsetT) {
	c.tables(t, slot, func(kv *flatbuffers.Table) {
		c.vector(kv, 4, 1)
		c.vector(kv, 6, 1)
	})
}

func (c *fbCheck) schema(s *flatbuffers.Table) {
	if s == nil {
		return
	}
	c.tables(s, 6, c.field)
	c.keyValues(s, 8)
	c.vector(s, 10, 8)
}

func (c *fbCheck) field(f *flatbuffers.Table) {
	if c.depth++; c.depth > 64 {
		panic(errFlatbuffer)
	}
	defer func() { c.depth-- }()
	c.vector(f, 4, 1)              // name
	if f.GetByteSlot(8, 0) == 14 { // Type.Union: typeIds
		if u := c.sub(f, 10); u != nil {
			c.vector(u, 6, 4)
		}
	}
	c.sub(f, 10)
	if d := c.sub(f, 12); d != nil {
		c.sub(d, 6)
	}
	c.tables(f, 14, c.field) // children
	c.keyValues(f, 16)
}

func (c *fbCheck) recordBatch(r *flatbuffers.Table) {
	if r == nil {
		return
	}
	c.vector(r, 6, 16) // nodes
	c.vector(r, 8, 16) // buffers
	c.sub(r, 10)
	c.vector(r, 12, 8) // variadic buffer counts
}

// checkMessage checks an IPC Message flatbuffer.
func checkMessage(meta []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", errFlatbuffer, p)
		}
	}()
	c := &fbCheck{buf: meta}
	if len(meta) < 8 {
		return errFlatbuffer
	}
	m := c.table(0)
	c.keyValues(m, 12)
	h := c.sub(m, 8)
	switch m.GetByteSlot(6, 0) {
	case 1:
		c.schema(h)
	case 2:
		if h != nil {
			c.recordBatch(c.sub(h, 6))
		}
	case 3:
		c.recordBatch(h)
	}
	return nil
}

// checkFooter checks an IPC file's Footer flatbuffer.
func checkFooter(buf []byte, size int64) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", errFlatbuffer, p)
		}
	}()
	c := &fbCheck{buf: buf}
	if len(buf) < 8 {
		return errFlatbuffer
	}
	f := c.table(0)
	c.schema(c.sub(f, 6))
	// Blocks (offset, metadata length, body length) must lie in the file:
	// the reader allocates what they say before it reads.
	for _, slot := range []flatbuffers.VOffsetT{8, 10} {
		n, start := c.vector(f, slot, 24)
		for i := 0; i < n; i++ {
			b := buf[int(start)+24*i:]
			off := int64(binary.LittleEndian.Uint64(b))
			meta := int64(int32(binary.LittleEndian.Uint32(b[8:])))
			body := int64(binary.LittleEndian.Uint64(b[16:]))
			if off < 0 || meta < 0 || body < 0 || off > size || meta > size-off || body > size-off-meta {
				return fmt.Errorf("%w: block %d of %d bytes at offset %d", errIPCFraming, i, meta+body, off)
			}
		}
	}
	c.keyValues(f, 12)
	return nil
}
