package functions

import (
	"math"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/compute"
)

func lowerOp(s string) string { return strings.ToLower(s) }

// upperOp maps ß to ẞ, as DuckDB's utf8proc does (Go keeps ß).
func upperOp(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "ß", "ẞ")) }

func strMap(op func(string) string) ScalarFunc {
	return func(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
		return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) { o.str(op(v[0].string(i))) })
	}
}

func startsOp(s, p string) bool { return strings.HasPrefix(s, p) }
func endsOp(s, p string) bool   { return strings.HasSuffix(s, p) }

func strPred(op func(string, string) bool) ScalarFunc {
	return func(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
		return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) { o.bl(op(v[0].string(i), v[1].string(i))) })
	}
}

func concatOpFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	var sb strings.Builder
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		sb.Reset()
		for _, x := range v {
			sb.WriteString(x.string(i))
		}
		o.str(sb.String())
	})
}

// concatFunc is the function concat(...): NULL arguments are skipped, as
// DuckDB's (|| is concatOpFunc, NULL if either side is).
func concatFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	vs, err := vecs(args)
	if err != nil {
		return nil, err
	}
	defer releaseVecs(vs)
	o := newOut(c.Mem, ret, n)
	var sb strings.Builder
	for i := 0; i < n; i++ {
		sb.Reset()
		for _, x := range vs {
			if !x.isNull(i) {
				sb.WriteString(x.string(i))
			}
		}
		o.str(sb.String())
	}
	return o.finish(), nil
}

func lengthFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) { o.i64(int64(utf8.RuneCountInString(v[0].string(i)))) })
}

// substrFunc follows DuckDB: start is 1-based, counts from the end when
// negative, and 0 is the place before the first character; a negative n
// takes the characters before start.
func substrFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		r := []rune(v[0].string(i))
		size, off, length := int64(len(r)), v[1].int64(i), int64(math.MaxUint32)
		if len(v) > 2 {
			length = v[2].int64(i)
		}
		// Positions unclamped first (0 is the place before the first
		// character, a negative start counts from the end), clamped last.
		start := off - 1
		if off < 0 {
			start = size + off
		}
		end := start + length
		if length < 0 {
			start, end = start+length, start
		}
		start, end = max(start, 0), min(end, size)
		if start >= end {
			o.str("")
			return
		}
		o.str(string(r[start:end]))
	})
}

func replaceFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		o.str(strings.ReplaceAll(v[0].string(i), v[1].string(i), v[2].string(i)))
	})
}

func strposFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		s := v[0].string(i)
		k := strings.Index(s, v[1].string(i))
		if k < 0 {
			o.i64(0)
			return
		}
		o.i64(int64(utf8.RuneCountInString(s[:k])) + 1)
	})
}

// trimSet is trim/ltrim/rtrim: spaces, or with a second argument any of its
// characters (DuckDB's trim(s, chars)).
func trimSet(left, right bool) ScalarFunc {
	return func(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
		return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
			s, set := v[0].string(i), " "
			if len(v) > 1 {
				set = v[1].string(i)
			}
			if left {
				s = strings.TrimLeft(s, set)
			}
			if right {
				s = strings.TrimRight(s, set)
			}
			o.str(s)
		})
	}
}

// leftRight is left(s, n) and right(s, n) as DuckDB's: the first (last) n
// characters; a negative n drops that many from the other end instead.
func leftRight(fromRight bool) ScalarFunc {
	return func(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
		return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
			r := []rune(v[0].string(i))
			k, size := v[1].int64(i), int64(len(r))
			if k < 0 {
				k = max(size+k, 0)
			}
			k = min(k, size)
			if fromRight {
				o.str(string(r[size-k:]))
			} else {
				o.str(string(r[:k]))
			}
		})
	}
}

// splitPartFunc is split_part(s, sep, k): the k-th field (1-based; from the
// end when negative) of s split at sep, ” past either end; an empty sep
// splits s into characters, as DuckDB's string_split.
func splitPartFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		s, sep, k := v[0].string(i), v[1].string(i), v[2].int64(i)
		var parts []string
		if sep == "" {
			for _, r := range s {
				parts = append(parts, string(r))
			}
			if s == "" {
				parts = []string{""}
			}
		} else {
			parts = strings.Split(s, sep)
		}
		if k < 0 {
			k = int64(len(parts)) + k + 1
		}
		if k < 1 || k > int64(len(parts)) {
			o.str("")
			return
		}
		o.str(parts[k-1])
	})
}

// padFunc is lpad(s, n, fill) and rpad: s cut or padded with repeats of
// fill to n characters. The padded value's bytes are known before it is
// built, and made room for first (out.room).
func padFunc(right bool) ScalarFunc {
	return func(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
		return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
			s, size, fill := v[0].string(i), max(v[1].int64(i), 0), v[2].string(i)
			chars := int64(utf8.RuneCountInString(s))
			if chars >= size {
				o.str(string([]rune(s)[:size]))
				return
			}
			fr := []rune(fill)
			if len(fr) == 0 {
				o.str(s)
				return
			}
			pad := size - chars // characters of fill
			cycles, rest := pad/int64(len(fr)), pad%int64(len(fr))
			if cycles > (maxColumnBytes-int64(len(s)))/int64(len(fill)) {
				o.room(-1) // past any column, and past int64 if multiplied
				return
			}
			tail := string(fr[:rest])
			total := int64(len(s)) + cycles*int64(len(fill)) + int64(len(tail))
			if !o.room(total) {
				return
			}
			var b strings.Builder
			b.Grow(int(total))
			if right {
				b.WriteString(s)
			}
			for range cycles {
				b.WriteString(fill)
			}
			b.WriteString(tail)
			if !right {
				b.WriteString(s)
			}
			o.str(b.String())
		})
	}
}

func reverseOp(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// repeatFunc is repeat(s, n); the value's bytes are made room for before
// it is built (out.room).
func repeatFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		s, times := v[0].string(i), max(v[1].int64(i), 0)
		if len(s) > 0 && times > maxColumnBytes/int64(len(s)) {
			o.room(-1) // past any column, and past int64 if multiplied
			return
		}
		if !o.room(int64(len(s)) * times) {
			return
		}
		o.str(strings.Repeat(s, int(times)))
	})
}

func containsOp(s, sub string) bool { return strings.Contains(s, sub) }

func strlenFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) { o.i64(int64(len(v[0].string(i)))) })
}

// concatWsFunc is concat_ws(sep, s...): the non-NULL strings joined by sep;
// NULL only when sep is.
func concatWsFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	vs, err := vecs(args)
	if err != nil {
		return nil, err
	}
	defer releaseVecs(vs)
	o := newOut(c.Mem, ret, n)
	var sb strings.Builder
	for i := 0; i < n; i++ {
		if vs[0].isNull(i) {
			o.null()
			continue
		}
		sb.Reset()
		first := true
		for _, x := range vs[1:] {
			if x.isNull(i) {
				continue
			}
			if !first {
				sb.WriteString(vs[0].string(i))
			}
			first = false
			sb.WriteString(x.string(i))
		}
		o.str(sb.String())
	}
	return o.finish(), nil
}
