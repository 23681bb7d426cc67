package frame

import (
	"encoding/binary"
	"fmt"
)

// The Arrow IPC reader walks its flatbuffer metadata without bounds checks and
// sizes slices from vector lengths it finds there, so a forged length makes it
// allocate gigabytes (a fatal error, not a panic) and a cyclic offset makes it
// recurse until the stack overflows. verifyMessage walks the same metadata
// first with every read bounds-checked, every vector checked against the bytes
// that could hold it, and nesting limited. Slot numbers follow Arrow's
// Message.fbs and Schema.fbs.

const maxFieldDepth = 64

type fbuf []byte

// walk is one verification: the bytes and a budget of field visits. Tables
// may be shared (flatbuffers deduplicate), so a forged schema can point a
// field's children at the same field many times over and make any walk,
// Arrow's included, exponential; a real schema has far fewer fields than its
// metadata has bytes, so the budget is a fraction of the length.
type walk struct {
	fbuf
	fields int
}

func (b fbuf) u16(p int) (int, error) {
	if p < 0 || p+2 > len(b) {
		return 0, fmt.Errorf("%w: arrow ipc metadata read at %d outside %d bytes", ErrMalformed, p, len(b))
	}
	return int(binary.LittleEndian.Uint16(b[p:])), nil
}

func (b fbuf) u32(p int) (int, error) {
	if p < 0 || p+4 > len(b) {
		return 0, fmt.Errorf("%w: arrow ipc metadata read at %d outside %d bytes", ErrMalformed, p, len(b))
	}
	return int(binary.LittleEndian.Uint32(b[p:])), nil
}

func (b fbuf) i64(p int) (int64, error) {
	if p < 0 || p+8 > len(b) {
		return 0, fmt.Errorf("%w: arrow ipc metadata read at %d outside %d bytes", ErrMalformed, p, len(b))
	}
	return int64(binary.LittleEndian.Uint64(b[p:])), nil
}

// table checks the table at t and its vtable and returns t.
func (b fbuf) table(t int) (int, error) {
	so, err := b.u32(t)
	if err != nil {
		return 0, err
	}
	vt := t - int(int32(so))
	vlen, err := b.u16(vt)
	if err != nil {
		return 0, err
	}
	if vlen < 4 || vlen%2 != 0 || vt+vlen > len(b) {
		return 0, fmt.Errorf("%w: arrow ipc vtable of %d bytes at %d", ErrMalformed, vlen, vt)
	}
	tlen, err := b.u16(vt + 2)
	if err != nil {
		return 0, err
	}
	if t+tlen > len(b) {
		return 0, fmt.Errorf("%w: arrow ipc table of %d bytes at %d", ErrMalformed, tlen, t)
	}
	return t, nil
}

// field returns the position of slot in table t, or 0 if the slot is absent.
func (b fbuf) field(t, slot int) (int, error) {
	so, _ := b.u32(t) // checked by table
	vt := t - int(int32(so))
	vlen, _ := b.u16(vt)
	if 4+2*slot >= vlen {
		return 0, nil
	}
	off, err := b.u16(vt + 4 + 2*slot)
	if err != nil || off == 0 {
		return 0, err
	}
	if t+off+4 > len(b) {
		return 0, fmt.Errorf("%w: arrow ipc field %d of table at %d out of bounds", ErrMalformed, slot, t)
	}
	return t + off, nil
}

// ref follows the offset stored in slot of table t; 0 if absent.
func (b fbuf) ref(t, slot int) (int, error) {
	p, err := b.field(t, slot)
	if err != nil || p == 0 {
		return 0, err
	}
	off, err := b.u32(p)
	if err != nil {
		return 0, err
	}
	if p+off >= len(b) {
		return 0, fmt.Errorf("%w: arrow ipc offset out of bounds", ErrMalformed)
	}
	return p + off, nil
}

// vector checks the vector in slot of table t with elements of elem bytes and
// returns its start (the first element) and length.
func (b fbuf) vector(t, slot, elem int) (start, n int, err error) {
	v, err := b.ref(t, slot)
	if err != nil || v == 0 {
		return 0, 0, err
	}
	n, err = b.u32(v)
	if err != nil {
		return 0, 0, err
	}
	if uint64(n)*uint64(elem) > uint64(len(b)-v-4) {
		return 0, 0, fmt.Errorf("%w: arrow ipc vector of %d elements does not fit", ErrMalformed, n)
	}
	return v + 4, n, nil
}

// tables checks a vector of tables in slot of t and calls each on every one.
func (b fbuf) tables(t, slot int, each func(int) error) error {
	start, n, err := b.vector(t, slot, 4)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		p := start + 4*i
		off, _ := b.u32(p)
		tt, err := b.table(p + off)
		if err != nil {
			return err
		}
		if err := each(tt); err != nil {
			return err
		}
	}
	return nil
}

func (b fbuf) keyValues(t, slot int) error {
	return b.tables(t, slot, func(kv int) error {
		if _, _, err := b.vector(kv, 0, 1); err != nil {
			return err
		}
		_, _, err := b.vector(kv, 1, 1)
		return err
	})
}

func (b fbuf) subTable(t, slot int) (int, error) {
	p, err := b.ref(t, slot)
	if err != nil || p == 0 {
		return 0, err
	}
	return b.table(p)
}

// Message header types and the one Type with a vector (Union's typeIds).
const (
	fbHeaderSchema     = 1
	fbHeaderDictionary = 2
	fbHeaderRecord     = 3
	fbTypeUnion        = 14
	fbTypeTimestamp    = 10
)

func verifyMessage(meta []byte) error {
	b := &walk{fbuf: meta, fields: len(meta)/8 + 1}
	root, err := b.u32(0)
	if err != nil {
		return err
	}
	msg, err := b.table(root)
	if err != nil {
		return err
	}
	if err := b.keyValues(msg, 4); err != nil {
		return err
	}
	htype := 0
	if p, err := b.field(msg, 1); err != nil {
		return err
	} else if p != 0 {
		htype = int(b.fbuf[p])
	}
	hdr, err := b.subTable(msg, 2)
	if err != nil {
		return err
	}
	if hdr == 0 {
		return fmt.Errorf("%w: arrow ipc message without header", ErrMalformed)
	}
	var bodyLen int64
	if p, err := b.field(msg, 3); err != nil {
		return err
	} else if p != 0 {
		bodyLen, _ = b.i64(p)
	}
	// Rows are bounded by the bytes that carry them (a bit per row at
	// least), or a forged length on a column without buffers (an empty
	// struct, a zero-size list) would have consumers loop for ever.
	maxRows := max(8*bodyLen, 1<<16)
	switch htype {
	case fbHeaderSchema:
		return b.verifySchema(hdr)
	case fbHeaderRecord:
		return b.verifyRecordBatch(hdr, maxRows)
	case fbHeaderDictionary:
		rb, err := b.subTable(hdr, 1)
		if err != nil || rb == 0 {
			return err
		}
		return b.verifyRecordBatch(rb, maxRows)
	default:
		return fmt.Errorf("%w: arrow ipc message header type %d not accepted on a relay", ErrMalformed, htype)
	}
}

func (b *walk) verifySchema(s int) error {
	if err := b.keyValues(s, 2); err != nil {
		return err
	}
	if _, _, err := b.vector(s, 3, 8); err != nil {
		return err
	}
	return b.tables(s, 1, func(f int) error { return b.verifyField(f, 0) })
}

func (b *walk) verifyField(f, depth int) error {
	if b.fields--; b.fields < 0 {
		return fmt.Errorf("%w: arrow ipc schema with more fields than its metadata can hold", ErrMalformed)
	}
	if depth > maxFieldDepth {
		return fmt.Errorf("%w: arrow ipc fields nested deeper than %d", ErrMalformed, maxFieldDepth)
	}
	if _, _, err := b.vector(f, 0, 1); err != nil { // name
		return err
	}
	ttype := 0
	if p, err := b.field(f, 2); err != nil {
		return err
	} else if p != 0 {
		ttype = int(b.fbuf[p])
	}
	typ, err := b.subTable(f, 3)
	if err != nil {
		return err
	}
	if typ != 0 {
		switch ttype {
		case fbTypeUnion:
			if _, _, err := b.vector(typ, 1, 4); err != nil {
				return err
			}
		case fbTypeTimestamp:
			if _, _, err := b.vector(typ, 1, 1); err != nil {
				return err
			}
		}
	}
	if dict, err := b.subTable(f, 4); err != nil {
		return err
	} else if dict != 0 {
		if _, err := b.subTable(dict, 1); err != nil {
			return err
		}
	}
	if err := b.keyValues(f, 6); err != nil {
		return err
	}
	return b.tables(f, 5, func(c int) error { return b.verifyField(c, depth+1) })
}

func (b *walk) verifyRecordBatch(rb int, maxRows int64) error {
	if p, err := b.field(rb, 0); err != nil {
		return err
	} else if p != 0 {
		if n, _ := b.i64(p); n < 0 || n > maxRows {
			return fmt.Errorf("%w: record batch of %d rows, at most %d for its body", ErrMalformed, n, maxRows)
		}
	}
	nodes, nn, err := b.vector(rb, 1, 16)
	if err != nil {
		return err
	}
	for i := 0; i < nn; i++ {
		n, _ := b.i64(nodes + 16*i)
		z, _ := b.i64(nodes + 16*i + 8)
		if n < 0 || n > maxRows || z < 0 || z > n {
			return fmt.Errorf("%w: field node of %d rows with %d nulls, at most %d rows", ErrMalformed, n, z, maxRows)
		}
	}
	_, nbuf, err := b.vector(rb, 2, 16) // buffers
	if err != nil {
		return err
	}
	if _, err := b.subTable(rb, 3); err != nil { // compression
		return err
	}
	start, n, err := b.vector(rb, 4, 8) // variadic buffer counts size slices
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		c, _ := b.i64(start + 8*i)
		if c < 0 || c > int64(nbuf) {
			return fmt.Errorf("%w: arrow ipc variadic buffer count %d with %d buffers", ErrMalformed, c, nbuf)
		}
	}
	return nil
}
