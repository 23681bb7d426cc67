package functions

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// An aggregate's own ORDER BY (string_agg(s, ',' ORDER BY k DESC)) rides on
// the one argument an accumulator sees: the binder passes
// sort_key(s, 'DL', k), a string that sorts bytewise as (k DESC NULLS LAST)
// and then carries s, and string_agg_sorted sorts each group's keys before
// joining their values. Accumulators stay one-argument, and the ordering
// merges across partial aggregates like any other state.

// sortKeyFunc is sort_key(value, order, key...): NULL where value is;
// otherwise the keys' order-preserving encoding, value, and value's length
// (4 bytes, big-endian) to find it again. order has two letters per key: A
// or D, then F (NULLs first) or L (last).
func sortKeyFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	vs, err := vecs(args)
	if err != nil {
		return nil, err
	}
	defer releaseVecs(vs)
	o := newOut(c.Mem, ret, n)
	var buf []byte
	for i := 0; i < n; i++ {
		if vs[0].isNull(i) || vs[1].isNull(i) {
			o.null()
			continue
		}
		order := vs[1].string(i)
		if len(order) != 2*(len(vs)-2) {
			o.finish().Release()
			return nil, fmt.Errorf("%w: sort_key: order %q does not describe %d keys", ErrBadArgument, order, len(vs)-2)
		}
		buf = buf[:0]
		for k, v := range vs[2:] {
			buf = appendKey(buf, v, i, order[2*k] == 'D', order[2*k+1] == 'F')
		}
		val := vs[0].string(i)
		buf = append(buf, val...)
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(val)))
		o.str(string(buf))
	}
	return o.finish(), nil
}

// appendKey appends row i of v so that bytewise order is the key's order:
// a NULL marker (NULLs first or last in either direction), then the value,
// its bytes inverted for DESC.
func appendKey(buf []byte, v *vec, i int, desc, nullsFirst bool) []byte {
	if v.isNull(i) {
		if nullsFirst {
			return append(buf, 0)
		}
		return append(buf, 2)
	}
	buf = append(buf, 1)
	start := len(buf)
	switch v.kind {
	case kInt:
		buf = binary.BigEndian.AppendUint64(buf, uint64(v.int64(i))^(1<<63))
	case kFloat:
		f := v.float64(i)
		if f == 0 {
			f = 0 // -0 sorts with 0
		}
		b := math.Float64bits(f)
		if b>>63 == 1 {
			b = ^b
		} else {
			b |= 1 << 63
		}
		buf = binary.BigEndian.AppendUint64(buf, b)
	case kString:
		// 0 is escaped as 0 0xFF and the end is 0 0: no key is a prefix of
		// another's encoding, so the value after it never decides between
		// two different keys.
		s := v.string(i)
		for j := 0; j < len(s); j++ {
			buf = append(buf, s[j])
			if s[j] == 0 {
				buf = append(buf, 0xFF)
			}
		}
		buf = append(buf, 0, 0)
	case kBool:
		if v.bool(i) {
			buf = append(buf, 1)
		} else {
			buf = append(buf, 0)
		}
	}
	if desc {
		for j := start; j < len(buf); j++ {
			buf[j] = ^buf[j]
		}
	}
	return buf
}

// sortKeyValue is the value a sort_key carries. string_agg_sorted can be
// called by name over any string: one too short to carry its length is its
// own value.
func sortKeyValue(k string) string {
	if len(k) < 4 {
		return k
	}
	n := int(binary.BigEndian.Uint32([]byte(k[len(k)-4:])))
	if n > len(k)-4 {
		return k
	}
	return k[len(k)-4-n : len(k)-4]
}

// sortedStringAggAcc is string_agg(s, sep ORDER BY ...) over sort_key
// values: each group's keys in order, their values joined by sep; with
// distinct (string_agg(DISTINCT s), whose keys are the values) each value
// once.
type sortedStringAggAcc struct {
	stringAggAcc
	distinct bool
}

func newSortedStringAgg(arg, ret arrow.DataType, params ...any) (Accumulator, error) {
	distinct := false
	if len(params) == 2 {
		d, ok := params[1].(bool)
		if !ok {
			return nil, fmt.Errorf("%w: string_agg_sorted's third argument says DISTINCT, a BOOLEAN constant, got %v", ErrBadArgument, params[1])
		}
		distinct, params = d, params[:1]
	}
	a, err := newStringAgg(arg, ret, params...)
	if err != nil {
		return nil, err
	}
	return &sortedStringAggAcc{stringAggAcc: *a.(*stringAggAcc), distinct: distinct}, nil
}

func (a *sortedStringAggAcc) Finish(mem memory.Allocator, gids []uint32) arrow.Array {
	o := newOut(mem, arrow.BinaryTypes.String, len(gids))
	var b strings.Builder
	for _, g := range gids {
		keys := a.parts[g]
		if len(keys) == 0 {
			o.null()
			continue
		}
		sorted := append([]string(nil), keys...)
		sort.Strings(sorted)
		// Room for the joined values first, as stringAggAcc.Finish.
		size := int64(len(a.sep)) * int64(len(sorted)-1)
		for _, k := range sorted {
			size += int64(len(sortKeyValue(k)))
		}
		if !o.room(size) {
			o.b.Release()
			panic(o.err) // a value no column holds: the aggregate fails its query
		}
		b.Reset()
		for j, k := range sorted {
			if a.distinct && j > 0 && k == sorted[j-1] {
				continue
			}
			if j > 0 {
				b.WriteString(a.sep)
			}
			b.WriteString(sortKeyValue(k))
		}
		o.str(b.String())
	}
	return o.finish()
}
