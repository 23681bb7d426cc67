package functions

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/compute"
)

// DuckDB's regular expressions are RE2, and so are Go's: a pattern means the
// same on both. Patterns are compiled once per distinct text in a batch (in
// practice a constant: once per batch).

// regexps compiles patterns with options ('i': ignore case, 's': . matches
// newline; 'g' is regexp_replace's and 'c' the default, case-sensitive).
type regexps struct {
	fn    string
	cache map[string]*regexp.Regexp
	err   error
}

func (r *regexps) get(pattern, opts string) *regexp.Regexp {
	key := opts + "\x00" + pattern
	if re, ok := r.cache[key]; ok {
		return re
	}
	flags := ""
	for _, o := range opts {
		switch o {
		case 'i':
			flags += "i"
		case 's':
			flags += "s"
		case 'c', 'g':
		default:
			if r.err == nil {
				r.err = fmt.Errorf("%w: %s: unknown option %q (want i, c, s or g)", ErrBadArgument, r.fn, string(o))
			}
			return nil
		}
	}
	src := pattern
	if flags != "" {
		src = "(?" + flags + ")" + pattern
	}
	re, err := regexp.Compile(src)
	if err != nil {
		if r.err == nil {
			r.err = fmt.Errorf("%w: %s: %v", ErrBadArgument, r.fn, err)
		}
		return nil
	}
	if r.cache == nil {
		r.cache = map[string]*regexp.Regexp{}
	}
	r.cache[key] = re
	return re
}

// regexpMatchesFunc is regexp_matches(s, pattern [, options]): TRUE when the
// pattern matches anywhere in s.
func regexpMatchesFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	rs := &regexps{fn: "regexp_matches"}
	a, err := rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		opts := ""
		if len(v) > 2 {
			opts = v[2].string(i)
		}
		re := rs.get(v[1].string(i), opts)
		if re == nil {
			o.null()
			return
		}
		o.bl(re.MatchString(v[0].string(i)))
	})
	return checked(a, err, rs.err)
}

// regexpReplaceFunc is regexp_replace(s, pattern, replacement [, options]):
// the first match replaced, every match with option 'g'; \1 ... \9 in the
// replacement are the groups, \0 the whole match (RE2's, DuckDB's spelling).
func regexpReplaceFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	rs := &regexps{fn: "regexp_replace"}
	a, err := rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		opts := ""
		if len(v) > 3 {
			opts = v[3].string(i)
		}
		re := rs.get(v[1].string(i), opts)
		if re == nil {
			o.null()
			return
		}
		s, tmpl := v[0].string(i), goTemplate(v[2].string(i))
		if strings.ContainsRune(opts, 'g') {
			o.str(re.ReplaceAllString(s, tmpl))
			return
		}
		m := re.FindStringSubmatchIndex(s)
		if m == nil {
			o.str(s)
			return
		}
		o.str(s[:m[0]] + string(re.ExpandString(nil, tmpl, s, m)) + s[m[1]:])
	})
	return checked(a, err, rs.err)
}

// goTemplate turns an RE2 replacement (\1, \\ for a backslash) into Go's
// (${1}, $$ for a dollar).
func goTemplate(r string) string {
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		switch {
		case r[i] == '$':
			b.WriteString("$$")
		case r[i] == '\\' && i+1 < len(r) && r[i+1] >= '0' && r[i+1] <= '9':
			b.WriteString("${" + string(r[i+1]) + "}")
			i++
		case r[i] == '\\' && i+1 < len(r) && r[i+1] == '\\':
			b.WriteByte('\\')
			i++
		default:
			b.WriteByte(r[i])
		}
	}
	return b.String()
}

// checked fails the call on a bad pattern or option, releasing the result.
func checked(a arrow.Array, err, bad error) (arrow.Array, error) {
	if err == nil && bad != nil {
		a.Release()
		return nil, bad
	}
	return a, err
}

// regexpExtractFunc is regexp_extract(s, pattern [, group [, options]]): the
// first match's group (0: the whole match). NULL when nothing matches or the
// group takes no part in the match, as Flink's REGEXP_EXTRACT: DuckDB gives an empty string
// there, but then a ported `IS NOT NULL` filter keeps every row, and it cannot
// be told from an empty match.
func regexpExtractFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	rs := &regexps{fn: "regexp_extract"}
	a, err := rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		opts, group := "", int64(0)
		if len(v) > 2 {
			group = v[2].int64(i)
		}
		if len(v) > 3 {
			opts = v[3].string(i)
		}
		re := rs.get(v[1].string(i), opts)
		if re == nil {
			o.null()
			return
		}
		if group < 0 || group > int64(re.NumSubexp()) {
			if rs.err == nil {
				rs.err = fmt.Errorf("%w: regexp_extract: group %d out of range (the pattern has %d)", ErrBadArgument, group, re.NumSubexp())
			}
			o.null()
			return
		}
		s := v[0].string(i)
		m := re.FindStringSubmatchIndex(s)
		if m == nil || m[2*group] < 0 {
			o.null()
			return
		}
		o.str(s[m[2*group]:m[2*group+1]])
	})
	return checked(a, err, rs.err)
}

// regexpFullMatchFunc is regexp_full_match(s, pattern [, options]): TRUE
// when the pattern matches the whole of s.
func regexpFullMatchFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	rs := &regexps{fn: "regexp_full_match"}
	a, err := rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		opts := ""
		if len(v) > 2 {
			opts = v[2].string(i)
		}
		re := rs.get(`\A(?:`+v[1].string(i)+`)\z`, opts)
		if re == nil {
			o.null()
			return
		}
		o.bl(re.MatchString(v[0].string(i)))
	})
	return checked(a, err, rs.err)
}
