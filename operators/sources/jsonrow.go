package sources

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// jsonRow decodes one JSON object straight into a batcher's builders by the
// declared schema: a scanner over the text notes where each declared field's
// value lies, skipping (but checking) the others, and the common cases
// (a number into BIGINT or DOUBLE, a string into VARCHAR or TIMESTAMP, a
// boolean) are parsed from those bytes. Why: decoding every message into a
// map[string]any was two thirds of a NATS source's CPU (a map, a boxed
// value and a string per field, then a type switch per value).
//
// It accepts exactly what DecodeObject + convert accept, with the same
// values: whatever the fast cases do not take (escaped strings, nested
// values, other types, unusual number or time forms) is decoded as
// encoding/json would and converted by convert. Like encoding/json's
// Decoder, text after the object is not read, and of a key given twice the
// last value counts.
type jsonRow struct {
	fields []arrow.Field // the schema's (Schema.Fields copies them each call)
	ids    []arrow.Type  // their types' ids, asked once, not per value
	// field maps a name to its first field; first[i] is the first field of
	// field i's name (a schema may name a column twice: both read it).
	field map[string]int
	first []int
	slots []jsonSlot
	cells []jsonCell
	vals  []any // a cell's value where convert made it (how 'v')
	// minutes are each column's last timestamp's minute (a TIMESTAMP
	// column's alone is ever set).
	minutes []minuteCache
	text    []byte
	pos     int
	// keys are the keys of the last object read, in its order, with the
	// field each names (-1: none declared). A stream's messages come from
	// producers that write their fields in one order: the k-th key is
	// compared with the last object's k-th, and only a key that differs
	// is looked up by hash (the lookup was a tenth of decoding a bid).
	keys []jsonKey
	// simple turns off the fast paths (keys by position, strings scanned
	// by table): tests and benchmarks compare the two.
	simple bool
	// bytewise scans strings by table a byte at a time, not eight bytes
	// a word first: BenchmarkAppendJSONStrings compares the two.
	bytewise bool
	// scanKeys scans every key as a string, not first comparing its bytes
	// with the last object's (sameKey): BenchmarkAppendJSONKeys compares.
	scanKeys bool
	// general reads every object with object, not fastObject first:
	// BenchmarkAppendJSONFast compares the two.
	general bool
}

// jsonKey is a key seen at some position of the last object.
type jsonKey struct {
	name  string
	field int
}

// maxJSONKeys bounds the keys remembered by position: an object's first
// ones, as many as a declared schema could want matched, not one per key of
// an arbitrarily wide object.
const maxJSONKeys = 256

// jsonSlot is where a declared field's value lies in the text.
type jsonSlot struct {
	set        bool
	kind       byte // '"' string, 'n' number, 't' true, 'f' false, '0' null, '{' object, '[' array
	start, end int  // the value's bytes (a string's without its quotes)
	escaped    bool // a string holding escapes
}

// jsonCell is a field's value once converted, before the row is appended
// (a row that does not fit is refused whole). It holds no pointer (a
// string is its bounds in the text, convert's value is in jsonRow.vals):
// setting a cell costs no write barrier while the GC runs, and clearing
// one is a store of how.
type jsonCell struct {
	how        byte // 0 NULL, 'i' int64, 'f' float64, 'b' the text's bytes, 'B' bool, 't' timestamp, 'v' vals' value
	i          int64
	f          float64
	start, end int // 'b': the bytes' bounds in the text
}

// maxJSONDepth is encoding/json's nesting limit.
const maxJSONDepth = 10000

var errJSONSyntax = errors.New("invalid JSON")

func newJSONRow(schema *arrow.Schema) *jsonRow {
	d := &jsonRow{fields: schema.Fields(), field: make(map[string]int, schema.NumFields()),
		first: make([]int, schema.NumFields()), slots: make([]jsonSlot, schema.NumFields()), cells: make([]jsonCell, schema.NumFields()), vals: make([]any, schema.NumFields()), minutes: make([]minuteCache, schema.NumFields())}
	d.ids = make([]arrow.Type, len(d.fields))
	for i, f := range d.fields {
		d.ids[i] = f.Type.ID()
		if j, ok := d.field[f.Name]; ok {
			d.first[i] = j
			continue
		}
		d.field[f.Name] = i
		d.first[i] = i
	}
	return d
}

// decode reads text's object into the cells; the error wraps ErrBadRow.
func (d *jsonRow) decode(text []byte) error {
	for i := range d.slots {
		d.slots[i].set = false
	}
	// UTF-8 is checked where it can be wrong, not over the whole text
	// first (that pass was a twentieth of decoding a bid): a byte of 0x80
	// or more is a syntax error outside a string, and str checks a string
	// holding one. So invalid UTF-8 anywhere read fails the scan, and it
	// is named as before, ahead of any syntax error; the text after the
	// object is checked on its own.
	d.text, d.pos = text, 0
	var err error
	if d.simple || d.general || !d.fastObject(text) {
		// Not of the common form, or not valid: the general scanner
		// reads it from the start, and names what is wrong.
		for i := range d.slots {
			d.slots[i].set = false
		}
		d.pos = 0
		err = d.object()
	}
	if err != nil || !utf8.Valid(text[d.pos:]) {
		d.text = nil
		if !utf8.Valid(text) {
			return fmt.Errorf("%w: %w", ErrBadRow, ErrInvalidUTF8)
		}
		return fmt.Errorf("%w: not a JSON object: %v", ErrBadRow, err)
	}
	for i, f := range d.fields {
		if err := d.convert(i, f.Type); err != nil {
			d.text = nil
			return fmt.Errorf("%w: field %q: %v", ErrBadRow, f.Name, err)
		}
	}
	d.text = nil // not kept past the call (no defer: a few ns a row)
	return nil
}

// appendTo appends the cells decoded from text as one row.
func (d *jsonRow) appendTo(b *batcher, text []byte) {
	for i := range d.cells {
		c := &d.cells[i]
		switch bb := b.bs[i]; c.how {
		case 0:
			bb.AppendNull()
		case 'i':
			bb.(*array.Int64Builder).Append(c.i)
		case 'f':
			bb.(*array.Float64Builder).Append(c.f)
		case 'b':
			bb.(*array.StringBuilder).BinaryBuilder.Append(text[c.start:c.end])
		case 'B':
			bb.(*array.BooleanBuilder).Append(c.i != 0)
		case 't':
			bb.(*array.TimestampBuilder).Append(arrow.Timestamp(c.i))
		default:
			appendTo(bb, d.vals[i])
			d.vals[i] = nil
		}
	}
	b.n++
}

// convert sets field i's cell from its slot.
func (d *jsonRow) convert(i int, t arrow.DataType) error {
	s := &d.slots[d.first[i]]
	c := &d.cells[i]
	c.how = 0
	if !s.set || s.kind == '0' {
		return nil
	}
	raw := d.text[s.start:s.end]
	switch id := d.ids[i]; {
	case s.kind == '"' && !s.escaped && len(raw) == 0 && id != arrow.STRING:
		return nil // convert's rule: an empty string is NULL but in a string column
	case id == arrow.STRING && (s.kind == '"' && !s.escaped || s.kind == 'n'):
		// A number's text is its json.Number, as convert reads it.
		c.how, c.start, c.end = 'b', s.start, s.end
		return nil
	case id == arrow.INT64 && s.kind == 'n':
		if v, ok := parseCSVInt(raw); ok {
			c.how, c.i = 'i', v
			return nil
		}
	case id == arrow.FLOAT64 && s.kind == 'n':
		if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
			c.how, c.f = 'f', f
			return nil
		}
	case id == arrow.BOOL && (s.kind == 't' || s.kind == 'f'):
		c.how = 'B'
		if s.kind == 't' {
			c.i = 1
		}
		return nil
	case id == arrow.TIMESTAMP && s.kind == '"' && !s.escaped:
		if ts, ok := d.minutes[i].parse(raw, t.(*arrow.TimestampType).Unit); ok {
			c.how, c.i = 't', int64(ts)
			return nil
		}
	}
	v, err := d.value(*s)
	if err != nil {
		return err
	}
	if v, err = convert(v, t); err != nil {
		return err
	}
	if v != nil {
		c.how, d.vals[i] = 'v', v
	}
	return nil
}

// value is the slot's value as encoding/json decodes it (numbers as
// json.Number).
func (d *jsonRow) value(s jsonSlot) (any, error) {
	switch s.kind {
	case 'n':
		return json.Number(d.text[s.start:s.end]), nil
	case 't':
		return true, nil
	case 'f':
		return false, nil
	case '"':
		if !s.escaped {
			return string(d.text[s.start:s.end]), nil
		}
		var str string
		err := json.Unmarshal(d.text[s.start-1:s.end+1], &str)
		return str, err
	}
	dec := json.NewDecoder(bytes.NewReader(d.text[s.start:s.end]))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

func (d *jsonRow) ws() {
	for d.pos < len(d.text) {
		switch d.text[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *jsonRow) syntax(want string) error {
	if d.pos >= len(d.text) {
		return fmt.Errorf("%w: unexpected end, want %s", errJSONSyntax, want)
	}
	return fmt.Errorf("%w: %q at offset %d, want %s", errJSONSyntax, d.text[d.pos], d.pos, want)
}

// object reads the top-level object, noting the declared fields' values.
func (d *jsonRow) object() error {
	d.ws()
	if d.pos < len(d.text) && d.text[d.pos] == 'n' {
		if err := d.literal("null"); err != nil {
			return err
		}
		return errors.New("null")
	}
	if d.pos >= len(d.text) || d.text[d.pos] != '{' {
		return d.syntax("an object")
	}
	d.pos++
	d.ws()
	if d.pos < len(d.text) && d.text[d.pos] == '}' {
		d.pos++
		return nil
	}
	for k := 0; ; k++ {
		d.ws()
		if d.pos >= len(d.text) || d.text[d.pos] != '"' {
			return d.syntax("a key")
		}
		i, known, same := d.sameKey(k)
		if !same {
			ks, ke, esc, err := d.str()
			if err != nil {
				return err
			}
			if !esc {
				i, known = d.key(k, d.text[ks:ke])
			} else {
				var k string
				if err := json.Unmarshal(d.text[ks-1:ke+1], &k); err != nil {
					return err
				}
				i, known = d.field[k]
			}
		}
		d.ws()
		if d.pos >= len(d.text) || d.text[d.pos] != ':' {
			return d.syntax("':'")
		}
		d.pos++
		d.ws()
		s, err := d.value1(1)
		if err != nil {
			return err
		}
		if known {
			d.slots[i] = s
		}
		d.ws()
		if d.pos >= len(d.text) {
			return d.syntax("',' or '}'")
		}
		switch d.text[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return nil
		default:
			return d.syntax("',' or '}'")
		}
	}
}

// sameKey reads the k-th key at d.pos (its opening quote) when its bytes
// are the last object's k-th key's, quoted: then it is that key, and is
// taken without scanning it as a string (a remembered key holds no quote,
// escape, control byte or invalid UTF-8: str checked it). Scanning keys
// was most of what a bid's seven keys cost.
func (d *jsonRow) sameKey(k int) (field int, known, same bool) {
	if d.simple || d.scanKeys || k >= len(d.keys) {
		return -1, false, false
	}
	key := d.keys[k]
	end := d.pos + 1 + len(key.name)
	if end >= len(d.text) || d.text[end] != '"' || string(d.text[d.pos+1:end]) != key.name {
		return -1, false, false
	}
	d.pos = end + 1
	return key.field, key.field >= 0, true
}

// key finds the field named by the k-th key of an object: the last
// object's k-th key's if it is the same, else by hash (remembered for the
// next object).
func (d *jsonRow) key(k int, name []byte) (int, bool) {
	if !d.simple && k < len(d.keys) && d.keys[k].name == string(name) {
		return d.keys[k].field, d.keys[k].field >= 0
	}
	i, known := d.field[string(name)]
	if d.simple || k > len(d.keys) || k >= maxJSONKeys {
		return i, known
	}
	if k == len(d.keys) {
		d.keys = append(d.keys, jsonKey{})
	}
	if known {
		d.keys[k] = jsonKey{name: d.fields[i].Name, field: i} // no copy of the key
	} else {
		d.keys[k] = jsonKey{name: string(name), field: -1}
	}
	return i, known
}

// value1 reads one value at depth and says where it lies.
func (d *jsonRow) value1(depth int) (jsonSlot, error) {
	if d.pos >= len(d.text) {
		return jsonSlot{}, d.syntax("a value")
	}
	start := d.pos
	switch c := d.text[d.pos]; {
	case c == '"':
		s, e, esc, err := d.str()
		return jsonSlot{set: true, kind: '"', start: s, end: e, escaped: esc}, err
	case c == '-' || c >= '0' && c <= '9':
		err := d.number()
		return jsonSlot{set: true, kind: 'n', start: start, end: d.pos}, err
	case c == 't':
		return jsonSlot{set: true, kind: 't', start: start, end: start + 4}, d.literal("true")
	case c == 'f':
		return jsonSlot{set: true, kind: 'f', start: start, end: start + 5}, d.literal("false")
	case c == 'n':
		return jsonSlot{set: true, kind: '0', start: start, end: start + 4}, d.literal("null")
	case c == '{' || c == '[':
		err := d.nested(depth + 1)
		return jsonSlot{set: true, kind: c, start: start, end: d.pos}, err
	}
	return jsonSlot{}, d.syntax("a value")
}

// nested checks an object or array value.
func (d *jsonRow) nested(depth int) error {
	if depth > maxJSONDepth {
		return fmt.Errorf("%w: nested past %d levels", errJSONSyntax, maxJSONDepth)
	}
	open := d.text[d.pos]
	end := byte(']')
	if open == '{' {
		end = '}'
	}
	d.pos++
	d.ws()
	if d.pos < len(d.text) && d.text[d.pos] == end {
		d.pos++
		return nil
	}
	for {
		d.ws()
		if open == '{' {
			if d.pos >= len(d.text) || d.text[d.pos] != '"' {
				return d.syntax("a key")
			}
			if _, _, _, err := d.str(); err != nil {
				return err
			}
			d.ws()
			if d.pos >= len(d.text) || d.text[d.pos] != ':' {
				return d.syntax("':'")
			}
			d.pos++
			d.ws()
		}
		if _, err := d.value1(depth); err != nil {
			return err
		}
		d.ws()
		if d.pos >= len(d.text) {
			return d.syntax("',' or the end")
		}
		switch d.text[d.pos] {
		case ',':
			d.pos++
		case end:
			d.pos++
			return nil
		default:
			return d.syntax("',' or the end")
		}
	}
}

// str reads a string at d.pos and returns its contents' bounds.
func (d *jsonRow) str() (start, end int, escaped bool, err error) {
	d.pos++ // the opening quote
	start = d.pos
	// The plain ASCII bytes at once, eight a word while no byte of the word
	// may end the run or needs a UTF-8 check; the switch takes what stops it.
	nonASCII := false
	for d.pos < len(d.text) {
		if !d.simple {
			if !d.bytewise {
				for d.pos+8 <= len(d.text) && plainWord(binary.LittleEndian.Uint64(d.text[d.pos:])) {
					d.pos += 8
				}
			}
			for d.pos < len(d.text) && jsonPlain[d.text[d.pos]] {
				d.pos++
			}
			if d.pos >= len(d.text) {
				break
			}
		}
		c := d.text[d.pos]
		switch {
		case c == '"':
			end = d.pos
			d.pos++
			if nonASCII && !utf8.Valid(d.text[start:end]) {
				return 0, 0, false, ErrInvalidUTF8
			}
			return start, end, escaped, nil
		case c >= 0x80:
			nonASCII = true
			d.pos++
		case c == '\\':
			escaped = true
			d.pos++
			if d.pos >= len(d.text) {
				return 0, 0, false, d.syntax("an escape")
			}
			switch d.text[d.pos] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				d.pos++
			case 'u':
				if d.pos+4 >= len(d.text) {
					return 0, 0, false, d.syntax("four hex digits")
				}
				for _, h := range d.text[d.pos+1 : d.pos+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return 0, 0, false, fmt.Errorf("%w: bad \\u escape at offset %d", errJSONSyntax, d.pos)
					}
				}
				d.pos += 5
			default:
				return 0, 0, false, d.syntax("an escape")
			}
		case c < 0x20:
			return 0, 0, false, d.syntax("no control character in a string")
		default:
			d.pos++
		}
	}
	return 0, 0, false, d.syntax("a closing quote")
}

// plainWord says whether none of the eight bytes of w is a quote, a
// backslash, a control character (below 0x20) or a byte of 0x80 or more
// (its UTF-8 is checked): what jsonPlain says of each, at once. A byte's high bit in (v - 0x01...) &^ v is set where v's byte is
// zero (a borrow from a lower zero byte can set it above one, so a false
// "not plain" only sends the word to the byte loop); x ^ '"'... is zero
// where x holds a quote, (x - 0x20...) &^ x flags the bytes under 0x20
// the same way, and x's own high bits flag 0x80 and up.
func plainWord(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := x ^ ('"' * ones)
	b := x ^ ('\\' * ones)
	hit := (q-ones)&^q | (b-ones)&^b | (x-0x20*ones)&^x | x
	return hit&highs == 0
}

// jsonPlain marks the ASCII bytes a string holds as they are: not its
// closing quote, an escape or a control character.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// number reads a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *jsonRow) number() error {
	digits := func() int {
		n := 0
		for d.pos < len(d.text) && d.text[d.pos] >= '0' && d.text[d.pos] <= '9' {
			d.pos++
			n++
		}
		return n
	}
	if d.text[d.pos] == '-' {
		d.pos++
	}
	if d.pos < len(d.text) && d.text[d.pos] == '0' {
		d.pos++
	} else if digits() == 0 {
		return d.syntax("a digit")
	}
	if d.pos < len(d.text) && d.text[d.pos] == '.' {
		d.pos++
		if digits() == 0 {
			return d.syntax("a digit")
		}
	}
	if d.pos < len(d.text) && (d.text[d.pos] == 'e' || d.text[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.text) && (d.text[d.pos] == '+' || d.text[d.pos] == '-') {
			d.pos++
		}
		if digits() == 0 {
			return d.syntax("a digit")
		}
	}
	return nil
}

func (d *jsonRow) literal(word string) error {
	if !bytes.HasPrefix(d.text[d.pos:], []byte(word)) {
		return d.syntax(word)
	}
	d.pos += len(word)
	return nil
}
