package rel

// intTable maps int64 keys to dense group ids with open addressing (linear
// probing, power-of-two capacity): the hot path of grouping and joining on one
// integer-like key, about twice as fast as a Go map for this use.
type intTable struct {
	keys []int64
	vals []uint32 // id+1; 0 marks an empty slot
	n    int
	mask uint64
}

func newIntTable() *intTable {
	// Small: an aggregation keeps a table per open window, and most
	// windows of a fine-grained one hold a few keys; the table doubles.
	const initial = 16
	return &intTable{keys: make([]int64, initial), vals: make([]uint32, initial), mask: initial - 1}
}

func hash64(k int64) uint64 {
	h := uint64(k) * 0x9E3779B97F4A7C15
	return h ^ (h >> 29)
}

// get returns the id of k, or ok = false.
func (t *intTable) get(k int64) (uint32, bool) {
	for i := hash64(k) & t.mask; ; i = (i + 1) & t.mask {
		v := t.vals[i]
		if v == 0 {
			return 0, false
		}
		if t.keys[i] == k {
			return v - 1, true
		}
	}
}

// put stores id for k (k must not be present).
func (t *intTable) put(k int64, id uint32) {
	if 2*(t.n+1) > len(t.keys) {
		t.grow()
	}
	i := hash64(k) & t.mask
	for t.vals[i] != 0 {
		i = (i + 1) & t.mask
	}
	t.keys[i], t.vals[i] = k, id+1
	t.n++
}

func (t *intTable) grow() {
	old, oldv := t.keys, t.vals
	t.keys, t.vals = make([]int64, 2*len(old)), make([]uint32, 2*len(old))
	t.mask = uint64(len(t.keys) - 1)
	t.n = 0
	for i, v := range oldv {
		if v != 0 {
			t.put(old[i], v-1)
		}
	}
}
