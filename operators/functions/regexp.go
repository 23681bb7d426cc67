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
	cache PatternCache
	err   error
}

func (r *regexps) get(pattern, opts string) *regexp.Regexp {
	key := opts + "\x00" + pattern
	if re := r.cache.Get(key); re != nil {
		return re
	}
	if err := CheckPattern(r.fn, pattern); err != nil {
		if r.err == nil {
			r.err = err
		}
		return nil
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
	r.cache.Put(key, re)
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
// The value's bytes are made room for before it is built (out.room): each
// match may grow by the replacement, and each group it names by the match
// (regexp_replace(repeat('a', 20000), '.*', repeat('\0', 20000)) is 400 MB).
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
		s, repl := v[0].string(i), v[2].string(i)
		tmpl, shape := goTemplate(repl)
		if strings.ContainsRune(opts, 'g') {
			if !o.room(shape.allBound(re, s)) {
				return
			}
			o.str(re.ReplaceAllString(s, tmpl))
			return
		}
		m := re.FindStringSubmatchIndex(s)
		if m == nil {
			o.str(s)
			return
		}
		if !o.room(int64(len(s)-(m[1]-m[0])) + shape.expanded(m)) {
			return
		}
		o.str(s[:m[0]] + string(re.ExpandString(nil, tmpl, s, m)) + s[m[1]:])
	})
	return checked(a, err, rs.err)
}

// replacement is what a regexp_replace replacement writes per match: lits
// bytes of its own and, refs[g] times, group g.
type replacement struct {
	lits int64
	refs [10]int64
}

// expanded is the bytes of the replacement of the match m (submatch
// indexes): its own bytes and each group it names (none past the
// pattern's groups, or unmatched).
func (p replacement) expanded(m []int) int64 {
	n := p.lits
	for g, k := range p.refs {
		if k > 0 && 2*g+1 < len(m) && m[2*g] >= 0 {
			n += k * int64(m[2*g+1]-m[2*g])
		}
	}
	return n
}

// allBound bounds the bytes of s with every match of re replaced (-1: past
// any column). A group lies within its match, so a replacement writes at
// most lits plus refs times its match's bytes. The matches are counted
// only when the bound without them (every byte and the end a match of all
// of s) is over twice s: below that it is made room for as it is.
func (p replacement) allBound(re *regexp.Regexp, s string) int64 {
	size, refs := int64(len(s)), int64(0)
	for _, k := range p.refs {
		refs += k
	}
	if size+(size+1)*p.lits+refs*size <= 2*size {
		return size + (size+1)*p.lits + refs*size
	}
	var count, matched int64
	re.ReplaceAllStringFunc(s, func(m string) string {
		count++
		matched += int64(len(m))
		return ""
	})
	grow := float64(count)*float64(p.lits) + float64(refs)*float64(matched)
	if float64(size-matched)+grow > maxColumnBytes {
		return -1
	}
	return size - matched + count*p.lits + refs*matched
}

// goTemplate turns an RE2 replacement (\1, \\ for a backslash) into Go's
// (${1}, $$ for a dollar), and says what it writes per match.
func goTemplate(r string) (string, replacement) {
	var b strings.Builder
	var p replacement
	for i := 0; i < len(r); i++ {
		switch {
		case r[i] == '$':
			b.WriteString("$$")
			p.lits++
		case r[i] == '\\' && i+1 < len(r) && r[i+1] >= '0' && r[i+1] <= '9':
			b.WriteString("${" + string(r[i+1]) + "}")
			p.refs[r[i+1]-'0']++
			i++
		case r[i] == '\\' && i+1 < len(r) && r[i+1] == '\\':
			b.WriteByte('\\')
			p.lits++
			i++
		default:
			b.WriteByte(r[i])
			p.lits++
		}
	}
	return b.String(), p
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
