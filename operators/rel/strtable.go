package rel

import "hash/maphash"

// strTable maps string keys to ids. A string of at most 7 bytes (a flag, a
// mode, a status, a country code: the usual GROUP BY of a string) is packed
// with its length into an int64 and probed in an intTable, without hashing
// or comparing memory; a longer one goes to longStrings, probed with the
// array's own bytes.
type strTable struct {
	short *intTable
	long  *longStrings
	// noPack sends every string to longStrings (the benchmark's baseline).
	noPack bool
}

func newStrTable() *strTable { return &strTable{short: newIntTable(), long: newLongStrings()} }

// packShort is v's bytes and length in one int64, for len(v) <= 7: two
// strings pack alike exactly when they are equal.
func packShort(v string) (int64, bool) {
	if len(v) > 7 {
		return 0, false
	}
	k := uint64(len(v)) << 56
	for i := 0; i < len(v); i++ {
		k |= uint64(v[i]) << (8 * i)
	}
	return int64(k), true
}

func (t *strTable) get(v string) (uint32, bool) {
	if k, ok := packShort(v); ok && !t.noPack {
		return t.short.get(k)
	}
	return t.long.get(v)
}

// put stores id for v (not present); a long v is copied, as it usually
// points into an array's buffer.
func (t *strTable) put(v string, id uint32) {
	if k, ok := packShort(v); ok && !t.noPack {
		t.short.put(k, id)
		return
	}
	t.long.put(v, id)
}

// longStrings maps strings to ids with open addressing over their hashes,
// their bytes copied into a few arena chunks: a Go map of strings held a
// string object per key, which the collector marked one by one (#25: a
// window per millisecond of new long keys was an object per window).
type longStrings struct {
	seed   maphash.Seed
	slots  []longSlot
	mask   uint64
	n      int
	chunks [][]byte
	held   int64 // the chunks' capacity
	used   int64 // the bytes in them
}

type longSlot struct {
	hash     uint64
	chunk    uint32
	off, len uint32
	id       uint32 // id+1; 0 marks an empty slot
}

// longSlotBytes is a slot's size.
const longSlotBytes = 24

// Arena chunks start small, for a table of a few keys, and double up to
// the largest, so that a table of many keys grows by chunks no larger than
// that, not by copying one buffer twice its size.
const (
	firstChunkBytes = 256
	lastChunkBytes  = 64 << 10
)

func newLongStrings() *longStrings {
	const initial = 16
	return &longStrings{seed: maphash.MakeSeed(), slots: make([]longSlot, initial), mask: initial - 1}
}

func (t *longStrings) get(v string) (uint32, bool) {
	return probeLong(t, maphash.String(t.seed, v), v)
}

// getBytes is get for a key in bytes (an encoded tuple).
func (t *longStrings) getBytes(b []byte) (uint32, bool) {
	return probeLong(t, maphash.Bytes(t.seed, b), b)
}

// probeLong looks v, of hash h, up in t.
func probeLong[K string | []byte](t *longStrings, h uint64, v K) (uint32, bool) {
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.id == 0 {
			return 0, false
		}
		if s.hash == h && int(s.len) == len(v) && string(t.chunks[s.chunk][s.off:s.off+s.len]) == string(v) {
			return s.id - 1, true
		}
	}
}

// put stores id for v (v must not be present), copying v's bytes.
func (t *longStrings) put(v string, id uint32) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	c := len(t.chunks) - 1
	if c < 0 || cap(t.chunks[c])-len(t.chunks[c]) < len(v) {
		size := firstChunkBytes
		if c >= 0 {
			size = min(2*cap(t.chunks[c]), lastChunkBytes)
		}
		t.chunks = append(t.chunks, make([]byte, 0, max(size, len(v))))
		c++
		t.held += int64(cap(t.chunks[c]))
	}
	off := len(t.chunks[c])
	t.chunks[c] = append(t.chunks[c], v...)
	t.used += int64(len(v))
	t.insert(longSlot{hash: maphash.String(t.seed, v), chunk: uint32(c), off: uint32(off), len: uint32(len(v)), id: id + 1})
	t.n++
}

func (t *longStrings) insert(s longSlot) {
	i := s.hash & t.mask
	for t.slots[i].id != 0 {
		i = (i + 1) & t.mask
	}
	t.slots[i] = s
}

func (t *longStrings) grow() {
	old := t.slots
	t.slots = make([]longSlot, 2*len(old))
	t.mask = uint64(len(t.slots) - 1)
	for _, s := range old {
		if s.id != 0 {
			t.insert(s)
		}
	}
}
