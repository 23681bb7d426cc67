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
		s := v[0].string(i)
		size, off, length := int64(utf8.RuneCountInString(s)), v[1].int64(i), int64(math.MaxUint32)
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
		o.str(runes(s, start, end))
	})
}

// runes is the characters [from, to) of s, found by walking it: a string
// is not copied at 4 bytes a character to be cut.
func runes(s string, from, to int64) string {
	at := runeOffset(s, from)
	return s[at : at+runeOffset(s[at:], to-from)]
}

// runeOffset is the byte offset of character k of s (len(s) past its end).
func runeOffset(s string, k int64) int {
	if k <= 0 {
		return 0
	}
	for i := range s {
		if k == 0 {
			return i
		}
		k--
	}
	return len(s)
}

// replaceFunc is replace(s, from, to). The value's bytes are counted and
// made room for before it is built (out.room): a short s whose every
// character becomes a long to is large (replace(repeat('a', 20000), 'a',
// repeat('b', 20000)) is 400 MB from 40 KB of arguments).
func replaceFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		s, from, to := v[0].string(i), v[1].string(i), v[2].string(i)
		if grow := int64(len(to) - len(from)); grow > 0 {
			// As ReplaceAll counts: "" matches at every character and the end.
			k := int64(strings.Count(s, from))
			if k > (maxColumnBytes-int64(len(s)))/grow {
				o.room(-1) // past any column, and past int64 if multiplied
				return
			}
			if !o.room(int64(len(s)) + k*grow) {
				return
			}
		}
		o.str(strings.ReplaceAll(s, from, to))
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
			s := v[0].string(i)
			k, size := v[1].int64(i), int64(utf8.RuneCountInString(s))
			if k < 0 {
				k = max(size+k, 0)
			}
			k = min(k, size)
			if fromRight {
				o.str(runes(s, size-k, size))
			} else {
				o.str(runes(s, 0, k))
			}
		})
	}
}

// splitPartFunc is split_part(s, sep, k): the k-th field (1-based; from the
// end when negative) of s split at sep, empty past either end; an empty sep
// splits s into characters, as DuckDB's string_split. The field is found
// by walking s, never by splitting all of it (a slice of every field is 16
// bytes for each character of repeat('a', n) split at 'a').
func splitPartFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		s, sep, k := v[0].string(i), v[1].string(i), v[2].int64(i)
		fields := int64(strings.Count(s, sep)) + 1
		if sep == "" {
			fields = max(int64(utf8.RuneCountInString(s)), 1)
		}
		if k < 0 {
			k = fields + k + 1
		}
		if k < 1 || k > fields {
			o.str("")
			return
		}
		if sep == "" {
			o.str(runes(s, k-1, k))
			return
		}
		o.str(field(s, sep, k-1))
	})
}

// field is the k-th (0-based) field of s split at sep (not empty), "" past
// the last.
func field(s, sep string, k int64) string {
	for ; k > 0; k-- {
		at := strings.Index(s, sep)
		if at < 0 {
			return ""
		}
		s = s[at+len(sep):]
	}
	if at := strings.Index(s, sep); at >= 0 {
		return s[:at]
	}
	return s
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
				o.str(runes(s, 0, size))
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

// reverseOp reverses s by character into a value of its own size (not 4
// bytes a character); an invalid byte reads as U+FFFD, as []rune(s) has it.
func reverseOp(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for len(s) > 0 {
		r, n := utf8.DecodeLastRuneInString(s)
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[len(s)-n:])
		}
		s = s[:len(s)-n]
	}
	return b.String()
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
