package functions

import (
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/compute"
)

func lowerOp(s string) string { return strings.ToLower(s) }
func upperOp(s string) string { return strings.ToUpper(s) }
func trimOp(s string) string  { return strings.Trim(s, " ") }
func ltrimOp(s string) string { return strings.TrimLeft(s, " ") }
func rtrimOp(s string) string { return strings.TrimRight(s, " ") }

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

func concatFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	var sb strings.Builder
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		sb.Reset()
		for _, x := range v {
			sb.WriteString(x.string(i))
		}
		o.str(sb.String())
	})
}

func lengthFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) { o.i64(int64(utf8.RuneCountInString(v[0].string(i)))) })
}

// substrFunc follows SQL: 1-based start; a start before 1 eats into the length.
func substrFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		r := []rune(v[0].string(i))
		start := v[1].int64(i) - 1
		end := int64(len(r))
		if len(v) > 2 {
			if l := v[2].int64(i); l < 0 {
				end = start
			} else {
				end = min(end, start+l)
			}
		}
		start = max(start, 0)
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
