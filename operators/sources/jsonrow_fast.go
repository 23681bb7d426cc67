package sources

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
)

// fastObject reads text's object in one pass, its position in a local
// variable, when the object is of the common form: keys without escapes
// or non-ASCII bytes, and values that are numbers, strings without
// escapes, true, false or null. It notes the declared fields' values in
// d.slots and learns the keys' order (d.keys) exactly as object does, and
// sets d.pos past the object.
//
// Why a second scanner: object and its helpers keep the position in
// d.pos, which every byte read loads and stores through d (the compiler
// cannot keep a field of a struct behind a pointer in a register across
// the calls), and a value goes through value1's switch and its returned
// slot; for a bid this was most of what decoding cost.
//
// Anything else (an escape, a nested value, whitespace other than ' ',
// '\t', '\n', '\r', invalid UTF-8, any syntax error, text not ending the
// object) makes it return false, and decode reads the text again with
// object from the start: object alone decides every error and every
// uncommon form, so the two agree by construction on all they both read
// (TestFastObjectAgreesWithObject, FuzzAppendJSON).
func (d *jsonRow) fastObject(t []byte) bool {
	n := len(t)
	p := 0
	for p < n && isJSONSpace(t[p]) {
		p++
	}
	if p >= n || t[p] != '{' {
		return false
	}
	p++
	for p < n && isJSONSpace(t[p]) {
		p++
	}
	if p < n && t[p] == '}' {
		d.pos = p + 1
		return true
	}
	for k := 0; ; k++ {
		for p < n && isJSONSpace(t[p]) {
			p++
		}
		if p >= n || t[p] != '"' {
			return false
		}
		field := -1
		if k < len(d.keys) && !d.scanKeys {
			// The last object's k-th key, quoted: the same key.
			key := d.keys[k]
			end := p + 1 + len(key.name)
			if end < n && t[end] == '"' && string(t[p+1:end]) == key.name {
				field, p = key.field, end+1
				goto colon
			}
		}
		{
			start := p + 1
			end := plainASCII(t, start)
			if end >= n || t[end] != '"' {
				return false // an escape, a control or non-ASCII byte, no end
			}
			if i, known := d.key(k, t[start:end]); known {
				field = i
			}
			p = end + 1
		}
	colon:
		for p < n && isJSONSpace(t[p]) {
			p++
		}
		if p >= n || t[p] != ':' {
			return false
		}
		p++
		for p < n && isJSONSpace(t[p]) {
			p++
		}
		if p >= n {
			return false
		}
		var slot jsonSlot
		switch c := t[p]; {
		case c == '"':
			start := p + 1
			end, ok := plainString(t, start)
			if !ok {
				return false
			}
			slot = jsonSlot{set: true, kind: '"', start: start, end: end}
			p = end + 1
		case c == '-' || c >= '0' && c <= '9':
			end := numberEnd(t, p)
			if end < 0 {
				return false
			}
			slot = jsonSlot{set: true, kind: 'n', start: p, end: end}
			p = end
		case c == 't' && p+4 <= n && string(t[p:p+4]) == "true":
			slot = jsonSlot{set: true, kind: 't', start: p, end: p + 4}
			p += 4
		case c == 'f' && p+5 <= n && string(t[p:p+5]) == "false":
			slot = jsonSlot{set: true, kind: 'f', start: p, end: p + 5}
			p += 5
		case c == 'n' && p+4 <= n && string(t[p:p+4]) == "null":
			slot = jsonSlot{set: true, kind: '0', start: p, end: p + 4}
			p += 4
		default:
			return false // a nested value or not a value
		}
		if field >= 0 {
			d.slots[field] = slot
		}
		for p < n && isJSONSpace(t[p]) {
			p++
		}
		if p >= n {
			return false
		}
		switch t[p] {
		case ',':
			p++
		case '}':
			d.pos = p + 1
			return true
		default:
			return false
		}
	}
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// plainASCII is the index of the first byte of t from i on that is not
// plain ASCII (a quote, a backslash, a control byte or one of 0x80 or
// more), or len(t): eight bytes a word, then the stopping byte found in
// its word by plainWord's mask (the lowest flagged byte of the mask is
// always a true one: a false flag needs a borrow from a lower, true one).
func plainASCII(t []byte, i int) int {
	const highs = 0x8080808080808080
	for i+8 <= len(t) {
		if hit := stopBytes(binary.LittleEndian.Uint64(t[i:])) | binary.LittleEndian.Uint64(t[i:]); hit&highs != 0 {
			return i + bits.TrailingZeros64(hit&highs)>>3
		}
		i += 8
	}
	for i < len(t) && jsonPlain[t[i]] {
		i++
	}
	return i
}

// plainString reads a string's contents from i (after its opening quote)
// to its closing quote when it holds no escape and no control byte: the
// quote's index and true. Bytes of 0x80 or more are read as plain and the
// string's UTF-8 checked once at its end (a string of non-ASCII text reads
// a word at a time too); false: an escape, a control byte, invalid UTF-8
// or no closing quote, which object reads (and names).
func plainString(t []byte, i int) (int, bool) {
	const highs = 0x8080808080808080
	start := i
	var high uint64 // the high bits of every word read whole
	for i+8 <= len(t) {
		x := binary.LittleEndian.Uint64(t[i:])
		if hit := stopBytes(x); hit&highs != 0 {
			// Only the bytes before the stop count: a high byte after
			// the quote is not the string's.
			at := bits.TrailingZeros64(hit & highs)
			high |= x & (1<<at - 1)
			i += at >> 3
			goto stop
		}
		high |= x
		i += 8
	}
	for i < len(t) && (jsonPlain[t[i]] || t[i] >= 0x80) {
		high |= uint64(t[i])
		i++
	}
	if i >= len(t) {
		return 0, false
	}
stop:
	if t[i] != '"' {
		return 0, false
	}
	if high&highs != 0 && !utf8.Valid(t[start:i]) {
		return 0, false
	}
	return i, true
}

// stopBytes flags (in each byte's high bit) the bytes of x that end a
// plain run in a string: a quote, a backslash, a control byte (below
// 0x20); plainWord's terms without the one for bytes of 0x80 or more.
func stopBytes(x uint64) uint64 {
	const ones = 0x0101010101010101
	q := x ^ ('"' * ones)
	b := x ^ ('\\' * ones)
	return (q-ones)&^q | (b-ones)&^b | (x-0x20*ones)&^x
}

// numberEnd is the end of the JSON number at t[i:], or -1 if it is not
// one: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func numberEnd(t []byte, i int) int {
	n := len(t)
	if t[i] == '-' {
		i++
	}
	switch {
	case i < n && t[i] == '0':
		i++
	case i < n && t[i] >= '1' && t[i] <= '9':
		i++
		for i < n && t[i] >= '0' && t[i] <= '9' {
			i++
		}
	default:
		return -1
	}
	if i < n && t[i] == '.' {
		i++
		if i >= n || t[i] < '0' || t[i] > '9' {
			return -1
		}
		for i < n && t[i] >= '0' && t[i] <= '9' {
			i++
		}
	}
	if i < n && (t[i] == 'e' || t[i] == 'E') {
		i++
		if i < n && (t[i] == '+' || t[i] == '-') {
			i++
		}
		if i >= n || t[i] < '0' || t[i] > '9' {
			return -1
		}
		for i < n && t[i] >= '0' && t[i] <= '9' {
			i++
		}
	}
	return i
}

// minuteCache remembers the date, hour and minute of the last timestamp a
// column read ("YYYY-MM-DDThh:mm" or with a space for the T: its first 16
// bytes) as seconds since the epoch. A stream's timestamps mostly share
// them with the one before: then only the seconds, the fraction and the
// zone are read, not the date checked and turned into days again (the
// timestamp was a quarter of decoding a bid in the engine).
type minuteCache struct {
	prefix [16]byte
	secs   int64
	set    bool
}

// parse is parseCSVTime(s, unit), exactly: whatever it does not read
// itself (another layout, a part out of range) goes to parseCSVTime,
// which decides it (TestMinuteCacheAgreesWithParseCSVTime).
func (c *minuteCache) parse(s []byte, unit arrow.TimeUnit) (arrow.Timestamp, bool) {
	if len(s) < 19 || s[10] != 'T' && s[10] != ' ' || s[16] != ':' {
		return parseCSVTime(s, unit)
	}
	if !c.set || string(s[:16]) != string(c.prefix[:]) {
		// The prefix read as parseTimeText's "YYYY-MM-DD hh:mm" layout:
		// the same checks of the date, hour and minute.
		p := [16]byte(s[:16])
		p[10] = ' '
		secs, _, ok := parseTimeText(p[:])
		if !ok {
			return parseCSVTime(s, unit)
		}
		c.prefix, c.secs, c.set = [16]byte(s[:16]), secs, true
	}
	s1, s2 := s[17]-'0', s[18]-'0'
	if s1 > 9 || s2 > 9 || s1 > 5 {
		return parseCSVTime(s, unit)
	}
	secs := c.secs + int64(s1)*10 + int64(s2)
	rest, nsec := 19, 0
	if rest < len(s) && s[rest] == '.' {
		n := 0
		for rest+1+n < len(s) && s[rest+1+n]-'0' <= 9 {
			nsec = nsec*10 + int(s[rest+1+n]-'0')
			n++
		}
		if n < 1 || n > 9 {
			return parseCSVTime(s, unit)
		}
		nsec *= fracScale[9-n]
		rest += 1 + n
	}
	if rest < len(s) {
		switch {
		case s[10] != 'T':
			return parseCSVTime(s, unit)
		case len(s)-rest == 1 && s[rest] == 'Z':
		default:
			return parseCSVTime(s, unit) // an offset: rare enough
		}
	}
	if ts, ok := coarseTimestamp(secs, nsec, unit); ok {
		return ts, true
	}
	return parseCSVTime(s, unit) // nanoseconds: parseCSVTime checks the year's range
}

// fracScale[k] turns a fraction of 9-k digits into nanoseconds.
var fracScale = [10]int{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000}
