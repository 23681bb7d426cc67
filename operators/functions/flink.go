package functions

import (
	"fmt"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/compute"
)

// Flink SQL's functions that have no DuckDB namesake, so that a query
// written for Flink (Nexmark's q10, q15-q17, q22) runs as written.

// dateFormatFunc is date_format(t, pattern): t written by a Java
// DateTimeFormatter pattern as Flink's DATE_FORMAT ('yyyy-MM-dd HH:mm:ss').
func dateFormatFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	var bad error
	cache := map[string]string{} // Java pattern -> strftime format
	var b strings.Builder
	a, err := rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		p := v[1].string(i)
		f, ok := cache[p]
		if !ok {
			var err error
			if f, err = javaPattern(p); err != nil {
				bad = err
			}
			cache[p] = f
		}
		b.Reset()
		strftime(&b, fromMicros(v[0].int64(i)), f)
		o.str(b.String())
	})
	if err == nil && bad != nil {
		a.Release()
		return nil, bad
	}
	return a, err
}

// javaPattern translates a Java date pattern into strftime's codes: runs of
// a letter are fields (yyyy, yy, MM, dd, HH, hh, mm, ss, SSS, SSSSSS, a, E,
// MMM), text in single quotes and anything not a letter is written as is.
func javaPattern(p string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(p); {
		ch := p[i]
		if ch == '\'' {
			j := strings.IndexByte(p[i+1:], '\'')
			if j < 0 {
				return "", fmt.Errorf("%w: date_format: unterminated quote in %q", ErrBadArgument, p)
			}
			lit := p[i+1 : i+1+j]
			if lit == "" {
				lit = "'" // '' is a quote
			}
			b.WriteString(strings.ReplaceAll(lit, "%", "%%"))
			i += j + 2
			continue
		}
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z') {
			if ch == '%' {
				b.WriteString("%%")
			} else {
				b.WriteByte(ch)
			}
			i++
			continue
		}
		j := i
		for j < len(p) && p[j] == ch {
			j++
		}
		run := p[i:j]
		code, ok := javaFields[run]
		if !ok {
			return "", fmt.Errorf("%w: date_format: pattern %q: unknown field %q (yyyy, yy, MM, MMM, dd, HH, hh, mm, ss, SSS, SSSSSS, a, E, EEEE)", ErrBadArgument, p, run)
		}
		b.WriteString(code)
		i = j
	}
	return b.String(), nil
}

var javaFields = map[string]string{
	"yyyy": "%Y", "yy": "%y", "y": "%Y", "uuuu": "%Y",
	"MM": "%m", "M": "%-m", "MMM": "%b", "MMMM": "%B",
	"dd": "%d", "d": "%-d", "D": "%-j", "DDD": "%j",
	"HH": "%H", "H": "%-H", "hh": "%I", "h": "%-I",
	"mm": "%M", "m": "%-M", "ss": "%S", "s": "%-S",
	"SSS": "%g", "SSSSSS": "%f", "a": "%p", "E": "%a", "EEE": "%a", "EEEE": "%A",
}

// splitIndexFunc is split_index(s, sep, i): the i-th (0-based) field of s
// split at sep, NULL past the end or for a negative i, as Flink's
// SPLIT_INDEX.
func splitIndexFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		s, sep, k := v[0].string(i), v[1].string(i), v[2].int64(i)
		if k < 0 || sep == "" {
			o.null()
			return
		}
		if k > int64(strings.Count(s, sep)) {
			o.null()
			return
		}
		o.str(field(s, sep, k))
	})
}
