package rel

// What a key table's hash structures hold in Go memory (its builders'
// buffers are Arrow's, counted by the allocator). An aggregation charges
// it per window (HashAggregate.windowGoBytes), and before a batch may grow
// it (keyTable.growBound), so a table's doubling is charged before it is
// allocated, not found afterwards.

// mapEntryBytes is what one entry of a Go map of strings costs beside the
// key's bytes: the bucket slot (string header, value, tophash) at the
// map's load factor.
const mapEntryBytes = 48

// bytes is what the table's slots hold.
func (t *intTable) bytes() int64 {
	if t == nil {
		return 0
	}
	return int64(cap(t.keys))*8 + int64(cap(t.vals))*4
}

// bytesWith is what the slots would hold with extra more keys: the table
// doubles while more than half full (put).
func (t *intTable) bytesWith(extra int) int64 {
	if t == nil {
		return 0
	}
	l := int64(len(t.keys))
	for 2*(int64(t.n)+int64(extra)) > l {
		l *= 2
	}
	return l * 12
}

func (t *strTable) bytes() int64 {
	if t == nil {
		return 0
	}
	return t.short.bytes() + t.long.bytes()
}

// bytes is what the table's slots hold and its chunks' room not yet
// used: the long keys' bytes themselves are counted with the builders'
// (windowGoBytes), as the copies they are of.
func (t *longStrings) bytes() int64 {
	if t == nil {
		return 0
	}
	return int64(cap(t.slots))*longSlotBytes + t.held - t.used
}

// bytesWith is bytes with extra more keys: the slots double while more
// than half full (put).
func (t *longStrings) bytesWith(extra int) int64 {
	l := int64(len(t.slots))
	for 2*(int64(t.n)+int64(extra)) > l {
		l *= 2
	}
	return l*longSlotBytes + t.held - t.used
}

// usedBytes is the keys' bytes in the chunks (an encoded tuple's).
func (t *longStrings) usedBytes() int64 {
	if t == nil {
		return 0
	}
	return t.used
}

func (t *codeIDs) bytes() int64 {
	if t == nil {
		return 0
	}
	return int64(cap(t.ids))*4 + int64(cap(t.gen))*4
}

func (m *multiKeys) bytes() int64 {
	if m == nil {
		return 0
	}
	var n int64
	for i := range m.cols {
		n += m.cols[i].strs.bytes() + m.cols[i].ints.bytes() + int64(cap(m.ids[i]))*4
	}
	for _, p := range m.pairs {
		n += p.bytes()
	}
	for i := range m.codes {
		n += m.codes[i].bytes()
	}
	return n
}

// goBytes is what the table's hash structures hold.
func (t *keyTable) goBytes() int64 {
	// An encoded tuple is about 9 bytes a column (a tag and a value).
	return int64(cap(t.buf)) + t.ints.bytes() + t.strs.bytes() + t.codes.bytes() + t.multi.bytes() + t.packed.bytes() + int64(cap(t.pvals))*9 +
		t.enc.bytes() + t.enc.usedBytes()
}

// growBound is at most how much goBytes grows when extra more keys are
// added: an integer table's next doublings, and per key a map entry and
// its encoding (string keys' bytes are the builders', counted apart).
func (t *keyTable) growBound(extra int) int64 {
	switch {
	case t.ints != nil:
		return t.ints.bytesWith(extra) - t.ints.bytes()
	case t.packed != nil:
		return t.packed.table.bytesWith(extra) - t.packed.table.bytes() + int64(extra)*9
	case t.strs != nil:
		return t.strs.short.bytesWith(extra) - t.strs.short.bytes() + t.strs.long.bytesWith(extra) - t.strs.long.bytes()
	case t.multi != nil:
		var n int64
		for i := range t.multi.cols {
			c := &t.multi.cols[i]
			if c.ints != nil {
				n += c.ints.bytesWith(extra) - c.ints.bytes()
			} else {
				n += c.strs.short.bytesWith(extra) - c.strs.short.bytes() + c.strs.long.bytesWith(extra) - c.strs.long.bytes()
			}
			n += int64(extra) * 4 // the batch's ids
		}
		for _, p := range t.multi.pairs {
			n += p.bytesWith(extra) - p.bytes()
		}
		return n
	}
	return int64(extra) * int64(mapEntryBytes+9*len(t.types))
}
