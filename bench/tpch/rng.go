package tpch

// rng is SplitMix64: small, fast and good enough for benchmark data. Each row
// of each table gets its own stream, seeded from (seed, table, row), so any
// chunk of a table can be generated alone, in any order, on any core, and
// still give the same values.
type rng struct{ s uint64 }

func mix64(x uint64) uint64 {
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// rowRng is the stream of one row of one table.
func rowRng(seed uint64, table tableID, row int64) rng {
	return rng{s: mix64(seed*0x9e3779b97f4a7c15 ^ mix64(uint64(table)<<48^uint64(row)))}
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix64(r.s)
}

// between is a uniform integer in [lo, hi].
func (r *rng) between(lo, hi int64) int64 {
	return lo + int64(r.next()%uint64(hi-lo+1))
}
