package rel

import "strings"

// strTable maps string keys to ids. A string of at most 7 bytes (a flag, a
// mode, a status, a country code: the usual GROUP BY of a string) is packed
// with its length into an int64 and probed in an intTable, without hashing
// or comparing memory; a longer one goes to a Go map, probed with the
// array's own bytes.
type strTable struct {
	short *intTable
	long  map[string]uint32
	// noPack sends every string to the map (the benchmark's baseline).
	noPack bool
}

func newStrTable() *strTable { return &strTable{short: newIntTable(), long: map[string]uint32{}} }

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
	id, ok := t.long[v]
	return id, ok
}

// put stores id for v (not present); a long v is copied, as it usually
// points into an array's buffer.
func (t *strTable) put(v string, id uint32) {
	if k, ok := packShort(v); ok && !t.noPack {
		t.short.put(k, id)
		return
	}
	t.long[strings.Clone(v)] = id
}
