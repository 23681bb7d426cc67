package frame

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/endian"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/internal/arrowx"
)

// The Arrow IPC reader copies every column buffer out of the message into
// freshly allocated (and zeroed) memory. For the plain layouts a relay carries
// (fixed-width values, strings and binaries, lists, fixed-size lists such as
// tensors, structs) loadZeroCopy instead builds the record on slices of the
// received body, which the garbage collector keeps alive as long as any column
// does. Everything it does not handle (dictionaries, unions, views, compressed
// bodies, unaligned bodies, big-endian schemas) goes through the Arrow reader.
//
// Because nothing is copied, nothing is trusted: every buffer must lie inside
// the body, be 8-byte aligned, and be long enough for its node's length, and
// offsets must be monotonic and end inside their data, so a forged frame is an
// error here and never an out-of-range read in an operator later. Plain
// records that take the Arrow reader's path (unaligned or compressed bodies)
// get the same checks afterwards (validateData). Other layouts are the Arrow
// reader's alone, and it does not check offsets or dictionary indices: peers
// that send those must be trusted.

const (
	fbMessageVersion = 0
	fbMessageBodyLen = 3
	minIPCVersion    = 3 // MetadataV4
)

// zeroCopyable reports whether dt has a layout loadZeroCopy handles.
func zeroCopyable(dt arrow.DataType) bool {
	switch t := dt.(type) {
	case *arrow.StructType:
		for _, f := range t.Fields() {
			if !zeroCopyable(f.Type) {
				return false
			}
		}
		return true
	case *arrow.ListType:
		return zeroCopyable(t.Elem())
	case *arrow.LargeListType:
		return zeroCopyable(t.Elem())
	case *arrow.FixedSizeListType:
		return zeroCopyable(t.Elem())
	case *arrow.StringType, *arrow.BinaryType, *arrow.LargeStringType, *arrow.LargeBinaryType:
		return true
	case arrow.ExtensionType, *arrow.DictionaryType, *arrow.MapType:
		return false
	case arrow.FixedWidthDataType:
		return dt.ID() != arrow.NULL && t.BitWidth() > 0
	}
	return false
}

func schemaZeroCopyable(s *arrow.Schema) bool {
	if s.Endianness() != endian.NativeEndian {
		return false
	}
	for _, f := range s.Fields() {
		if !zeroCopyable(f.Type) {
			return false
		}
	}
	return true
}

// zcSchema is what loadZeroCopy needs of a stream's schema, taken once per
// schema: Schema.Fields copies the fields on every call.
type zcSchema struct {
	schema *arrow.Schema
	fields []arrow.Field
	// verified is the last record batch metadata that passed verifyMessage.
	// A steady stream repeats the same metadata byte for byte (same row
	// count, same buffer layout), and identical bytes pass identically, so
	// it is compared instead of verified again.
	verified []byte
}

func newZCSchema(s *arrow.Schema) *zcSchema { return &zcSchema{schema: s, fields: s.Fields()} }

// loadZeroCopy decodes the record batch message at the start of rest. ok is
// false (with no error) when the message needs the Arrow reader instead.
// used is how many bytes of rest the message took.
func loadZeroCopy(zs *zcSchema, rest []byte, ch *bodyCharge) (rec arrow.Record, used int, ok bool, err error) {
	if len(rest) < 8 || binary.LittleEndian.Uint32(rest) != ipcContinuation {
		return nil, 0, false, nil
	}
	mlen := int(binary.LittleEndian.Uint32(rest[4:]))
	if mlen == 0 || mlen > len(rest)-8 {
		return nil, 0, false, nil
	}
	meta := rest[8 : 8+mlen]
	if !bytes.Equal(meta, zs.verified) {
		if err := verifyMessage(meta); err != nil {
			return nil, 0, false, err
		}
		zs.verified = append(zs.verified[:0], meta...)
	}
	b := &walk{fbuf: meta}
	root, _ := b.u32(0)
	msg, _ := b.table(root)
	if p, _ := b.field(msg, fbMessageVersion); p != 0 {
		if v, _ := b.u16(p); v < minIPCVersion {
			return nil, 0, false, nil
		}
	}
	htype := 0
	if p, _ := b.field(msg, 1); p != 0 {
		htype = int(meta[p])
	}
	if htype != fbHeaderRecord {
		return nil, 0, false, nil
	}
	rb, _ := b.subTable(msg, 2)
	if c, _ := b.subTable(rb, 3); c != 0 {
		return nil, 0, false, nil // compressed
	}
	var bodyLen, length int64
	if p, _ := b.field(msg, fbMessageBodyLen); p != 0 {
		bodyLen, _ = b.i64(p)
	}
	if p, _ := b.field(rb, 0); p != 0 {
		length, _ = b.i64(p)
	}
	start := 8 + mlen
	if bodyLen < 0 || bodyLen > int64(len(rest)-start) || length < 0 {
		return nil, 0, false, fmt.Errorf("%w: record batch body of %d bytes, %d left", ErrMalformed, bodyLen, len(rest)-start)
	}
	body := rest[start : start+int(bodyLen)]
	if len(body) > 0 && uintptr(unsafe.Pointer(&body[0]))%8 != 0 {
		return nil, 0, false, nil // the frame put the body off alignment: copy instead
	}
	l := &zcLoader{body: body}
	l.nodes, l.nn, _ = b.vector(rb, 1, 16)
	l.bufs, l.nb, _ = b.vector(rb, 2, 16)
	l.meta = meta
	// The record, its buffers' headers, their lists and its column list
	// live exactly as long as one another: a small record (most batches)
	// takes them in one allocation, not four.
	var out *arrowx.Record
	var cols []arrow.Array
	if l.nb <= slabBufs && len(zs.fields) <= slabCols {
		sl := &zcSlab{}
		out, l.pool, l.ptrs, cols = &sl.rec, sl.pool[:l.nb], sl.ptrs[:0:l.nb], sl.cols[:0:len(zs.fields)]
	} else {
		// nb is bounded by the verified metadata's length (16 bytes each).
		out, l.pool, l.ptrs = &arrowx.Record{}, make([]memory.Buffer, l.nb), make([]*memory.Buffer, 0, l.nb)
		cols = make([]arrow.Array, 0, len(zs.fields))
	}
	if ch != nil && len(body) > 0 {
		// The record holds the body as long as any of its buffers lives:
		// the query is charged for it until the last one is released.
		if err := ch.Charge(int64(len(body))); err != nil {
			return nil, 0, false, err
		}
		l.parent = memory.NewBufferWithAllocator(body, ch)
		defer func() {
			for i := range l.pool[:l.bi] {
				if c := &l.pool[i]; c.Parent() != nil {
					c.Release() // the arrays hold their own references
				}
			}
			l.parent.Release()
		}()
	}
	release := func() {
		for _, c := range cols {
			c.Release()
		}
	}
	for i := range zs.fields {
		f := &zs.fields[i]
		d, err := l.load(f.Type)
		if err != nil {
			release()
			return nil, 0, false, fmt.Errorf("%w: column %d (%s): %w", ErrMalformed, i, f.Name, err)
		}
		if int64(d.Len()) != length {
			d.Release()
			release()
			return nil, 0, false, fmt.Errorf("%w: column %d has %d rows, batch %d", ErrMalformed, i, d.Len(), length)
		}
		cols = append(cols, array.MakeFromData(d))
		d.Release()
	}
	if l.ni != l.nn || l.bi != l.nb {
		release()
		return nil, 0, false, fmt.Errorf("%w: record batch has %d nodes and %d buffers, schema uses %d and %d", ErrMalformed, l.nn, l.nb, l.ni, l.bi)
	}
	// A record of checked-by-construction columns: array.NewRecord would
	// re-prove with reflection what loadZeroCopy built from these very types.
	out.Init(zs.schema, cols, length)
	return out, start + int(bodyLen), true, nil
}

// The most buffers and columns a record may have to come in one zcSlab.
const slabBufs, slabCols = 8, 4

// zcSlab is a small record decoded in place with what it is made of.
type zcSlab struct {
	rec  arrowx.Record
	pool [slabBufs]memory.Buffer
	ptrs [slabBufs]*memory.Buffer
	cols [slabCols]arrow.Array
}

type zcLoader struct {
	meta         fbuf
	body         []byte
	pool         []memory.Buffer  // one per listed buffer
	ptrs         []*memory.Buffer // backing of the arrays' buffer lists
	nodes, nn    int              // start and count of the FieldNode vector
	bufs, nb     int              // start and count of the Buffer vector
	ni, bi       int              // next node and buffer
	depth, total int
	// parent, when set, is the body as a buffer that uncharges the query
	// when released; every buffer in pool is then a slice of it, so the
	// body stays charged while any array of the record lives.
	parent *memory.Buffer
}

// Charger counts memory a query holds that its allocator did not make (a
// worker's query budget): a record decoded in place holds its message's
// body.
type Charger = dataflow.Charger

// bodyCharge charges a query for the bodies its records are decoded in
// place of, and is their allocator: freeing one uncharges it.
type bodyCharge struct{ Charger }

func (*bodyCharge) Allocate(int) []byte           { panic("frame: a charged body allocates nothing") }
func (*bodyCharge) Reallocate(int, []byte) []byte { panic("frame: a charged body allocates nothing") }
func (c *bodyCharge) Free(b []byte)               { c.Uncharge(int64(len(b))) }

func (l *zcLoader) node() (length, nulls int, err error) {
	if l.ni >= l.nn {
		return 0, 0, fmt.Errorf("more arrays than field nodes (%d)", l.nn)
	}
	p := l.nodes + 16*l.ni
	l.ni++
	n := int64(binary.LittleEndian.Uint64(l.meta[p:]))
	z := int64(binary.LittleEndian.Uint64(l.meta[p+8:]))
	if n < 0 || z < 0 || z > n || n > 1<<40 {
		return 0, 0, fmt.Errorf("field node of length %d with %d nulls", n, z)
	}
	return int(n), int(z), nil
}

// buffer returns the next body buffer, nil if empty, checking it is at
// least need bytes long.
func (l *zcLoader) buffer(need int) (*memory.Buffer, []byte, error) {
	if l.bi >= l.nb {
		return nil, nil, fmt.Errorf("more buffers than the %d listed", l.nb)
	}
	p := l.bufs + 16*l.bi
	l.bi++
	off := int64(binary.LittleEndian.Uint64(l.meta[p:]))
	n := int64(binary.LittleEndian.Uint64(l.meta[p+8:]))
	if off < 0 || n < 0 || off > int64(len(l.body)) || n > int64(len(l.body))-off {
		return nil, nil, fmt.Errorf("buffer [%d, +%d) outside a %d-byte body", off, n, len(l.body))
	}
	if n < int64(need) {
		return nil, nil, fmt.Errorf("buffer of %d bytes, %d needed", n, need)
	}
	if n == 0 {
		return nil, nil, nil
	}
	if off%8 != 0 {
		return nil, nil, fmt.Errorf("buffer at unaligned offset %d", off)
	}
	b := l.body[off : off+n : off+n]
	buf := &l.pool[l.bi-1] // one allocation for all of them, not one each
	if l.parent != nil {
		// A slice of the charged body, made in place (SliceBuffer is
		// inlined: its result does not reach the heap).
		*buf = *memory.SliceBuffer(l.parent, int(off), int(n))
		return buf, buf.Bytes(), nil
	}
	buf.Reset(b)
	return buf, b, nil
}

// slots returns bs as an array's buffer list, carved out of one shared
// backing array while it lasts (capped, so no array can grow into the next).
func (l *zcLoader) slots(bs ...*memory.Buffer) []*memory.Buffer {
	n := len(l.ptrs)
	if n+len(bs) > cap(l.ptrs) {
		return append([]*memory.Buffer(nil), bs...)
	}
	l.ptrs = append(l.ptrs, bs...)
	return l.ptrs[n:len(l.ptrs):len(l.ptrs)]
}

func (l *zcLoader) validity(length, nulls int) (*memory.Buffer, error) {
	if nulls == 0 {
		_, _, err := l.buffer(0)
		return nil, err
	}
	buf, _, err := l.buffer((length + 7) / 8)
	return buf, err
}

// offsets returns the offsets buffer of a variable-length array of length
// rows, checked to be monotonic within [0, limit].
func (l *zcLoader) offsets(length int, wide bool, limit func(end int64) error) (*memory.Buffer, error) {
	w := 4
	if wide {
		w = 8
	}
	need := 0
	if length > 0 {
		need = (length + 1) * w
	}
	buf, b, err := l.buffer(need)
	if err != nil || length == 0 {
		if buf == nil && err == nil && length == 0 {
			// An empty array may omit its offsets; Arrow's arrays expect one.
			return memory.NewBufferBytes(make([]byte, w)), limit(0)
		}
		return buf, err
	}
	prev := int64(-1)
	for i := 0; i <= length; i++ {
		var v int64
		if wide {
			v = int64(binary.LittleEndian.Uint64(b[8*i:]))
		} else {
			v = int64(int32(binary.LittleEndian.Uint32(b[4*i:])))
		}
		if v < 0 || v < prev {
			return nil, fmt.Errorf("offset %d at %d after %d", v, i, prev)
		}
		prev = v
	}
	return buf, limit(prev)
}

func (l *zcLoader) load(dt arrow.DataType) (arrow.ArrayData, error) {
	if l.depth >= maxFieldDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxFieldDepth)
	}
	l.depth++ // a defer would cost more than the rest of a leaf's load
	d, err := l.loadAt(dt)
	l.depth--
	return d, err
}

func (l *zcLoader) loadAt(dt arrow.DataType) (arrow.ArrayData, error) {
	length, nulls, err := l.node()
	if err != nil {
		return nil, err
	}
	valid, err := l.validity(length, nulls)
	if err != nil {
		return nil, err
	}
	switch t := dt.(type) {
	case *arrow.StringType, *arrow.BinaryType, *arrow.LargeStringType, *arrow.LargeBinaryType:
		wide := dt.ID() == arrow.LARGE_STRING || dt.ID() == arrow.LARGE_BINARY
		var dataLen int64
		offs, err := l.offsets(length, wide, func(end int64) error { dataLen = end; return nil })
		if err != nil {
			return nil, err
		}
		data, _, err := l.buffer(int(dataLen))
		if err != nil {
			return nil, err
		}
		return array.NewData(dt, length, l.slots(valid, offs, data), nil, nulls, 0), nil
	case *arrow.ListType, *arrow.LargeListType:
		var elem arrow.DataType
		if lt, ok := t.(*arrow.ListType); ok {
			elem = lt.Elem()
		} else {
			elem = t.(*arrow.LargeListType).Elem()
		}
		var end int64
		offs, err := l.offsets(length, dt.ID() == arrow.LARGE_LIST, func(e int64) error { end = e; return nil })
		if err != nil {
			return nil, err
		}
		child, err := l.load(elem)
		if err != nil {
			return nil, err
		}
		if int64(child.Len()) < end {
			child.Release()
			return nil, fmt.Errorf("list offsets end at %d, child has %d", end, child.Len())
		}
		d := array.NewData(dt, length, l.slots(valid, offs), []arrow.ArrayData{child}, nulls, 0)
		child.Release()
		return d, nil
	case *arrow.FixedSizeListType:
		child, err := l.load(t.Elem())
		if err != nil {
			return nil, err
		}
		if int64(child.Len()) < int64(length)*int64(t.Len()) {
			child.Release()
			return nil, fmt.Errorf("fixed-size list of %d x %d, child has %d", length, t.Len(), child.Len())
		}
		d := array.NewData(dt, length, l.slots(valid), []arrow.ArrayData{child}, nulls, 0)
		child.Release()
		return d, nil
	case *arrow.StructType:
		children := make([]arrow.ArrayData, 0, len(t.Fields()))
		free := func() {
			for _, c := range children {
				c.Release()
			}
		}
		for _, f := range t.Fields() {
			c, err := l.load(f.Type)
			if err != nil {
				free()
				return nil, err
			}
			children = append(children, c)
			if c.Len() < length {
				free()
				return nil, fmt.Errorf("struct of %d rows, field %s has %d", length, f.Name, c.Len())
			}
		}
		d := array.NewData(dt, length, l.slots(valid), children, nulls, 0)
		free()
		return d, nil
	case arrow.FixedWidthDataType:
		bits := int64(t.BitWidth())
		values, _, err := l.buffer(int((int64(length)*bits + 7) / 8))
		if err != nil {
			return nil, err
		}
		return array.NewData(dt, length, l.slots(valid, values), nil, nulls, 0), nil
	}
	return nil, fmt.Errorf("type %s has no zero-copy layout", dt)
}

// validateData applies loadZeroCopy's checks to a record the Arrow reader
// decoded (it checks none of them), so a plain-layout record is safe to read
// whichever path decoded it.
func validateData(d arrow.ArrayData, depth int) error {
	if depth > maxFieldDepth {
		return fmt.Errorf("nested deeper than %d", maxFieldDepth)
	}
	n, nulls, off := d.Len(), d.NullN(), d.Offset()
	bs := d.Buffers()
	blen := func(i int) int {
		if i >= len(bs) || bs[i] == nil {
			return 0
		}
		return bs[i].Len()
	}
	if n < 0 || off < 0 || nulls > n {
		return fmt.Errorf("array of %d rows at offset %d with %d nulls", n, off, nulls)
	}
	if nulls > 0 && blen(0) < (off+n+7)/8 {
		return fmt.Errorf("validity of %d bytes for %d rows", blen(0), off+n)
	}
	checkOffsets := func(wide bool) (int64, error) {
		w := 4
		if wide {
			w = 8
		}
		if n == 0 {
			return 0, nil
		}
		if blen(1) < (off+n+1)*w {
			return 0, fmt.Errorf("offsets of %d bytes for %d rows", blen(1), off+n)
		}
		b := bs[1].Bytes()
		prev := int64(-1)
		for i := off; i <= off+n; i++ {
			var v int64
			if wide {
				v = int64(binary.LittleEndian.Uint64(b[8*i:]))
			} else {
				v = int64(int32(binary.LittleEndian.Uint32(b[4*i:])))
			}
			if v < 0 || v < prev {
				return 0, fmt.Errorf("offset %d at %d after %d", v, i, prev)
			}
			prev = v
		}
		return prev, nil
	}
	ch := d.Children()
	switch t := d.DataType().(type) {
	case *arrow.StringType, *arrow.BinaryType, *arrow.LargeStringType, *arrow.LargeBinaryType:
		end, err := checkOffsets(t.ID() == arrow.LARGE_STRING || t.ID() == arrow.LARGE_BINARY)
		if err != nil {
			return err
		}
		if int64(blen(2)) < end {
			return fmt.Errorf("offsets end at %d, data has %d bytes", end, blen(2))
		}
	case *arrow.ListType, *arrow.LargeListType:
		end, err := checkOffsets(t.ID() == arrow.LARGE_LIST)
		if err != nil {
			return err
		}
		if len(ch) != 1 || int64(ch[0].Len()) < end {
			return fmt.Errorf("list offsets end at %d beyond the child", end)
		}
		return validateData(ch[0], depth+1)
	case *arrow.FixedSizeListType:
		if len(ch) != 1 || int64(ch[0].Len()) < int64(off+n)*int64(t.Len()) {
			return fmt.Errorf("fixed-size list of %d x %d beyond the child", off+n, t.Len())
		}
		return validateData(ch[0], depth+1)
	case *arrow.StructType:
		if len(ch) != len(t.Fields()) {
			return fmt.Errorf("struct with %d of %d children", len(ch), len(t.Fields()))
		}
		for _, c := range ch {
			if c.Len() < off+n {
				return fmt.Errorf("struct of %d rows, child of %d", off+n, c.Len())
			}
			if err := validateData(c, depth+1); err != nil {
				return err
			}
		}
	case arrow.FixedWidthDataType:
		if int64(blen(1)) < (int64(off+n)*int64(t.BitWidth())+7)/8 && n > 0 {
			return fmt.Errorf("values of %d bytes for %d rows of %d bits", blen(1), off+n, t.BitWidth())
		}
	}
	return nil
}
