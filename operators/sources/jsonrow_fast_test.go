package sources

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// checkFastAgrees reads text with fastObject and with object, each after
// the same earlier object (so that the keys remembered by position are
// the same): where fastObject takes the text, it notes the same values and
// ends where object does. It returns whether fastObject took it.
func checkFastAgrees(t *testing.T, before, text string) bool {
	t.Helper()
	read := func(fast bool) (slots []jsonSlot, pos int, ok bool, keys []jsonKey) {
		d := newJSONRow(jsonRowSchema)
		for _, s := range []string{before, text} {
			for i := range d.slots {
				d.slots[i] = jsonSlot{}
			}
			d.text, d.pos = []byte(s), 0
			if fast {
				ok = d.fastObject(d.text)
			} else {
				ok = d.object() == nil
			}
		}
		return slices.Clone(d.slots), d.pos, ok, slices.Clone(d.keys)
	}
	fs, fp, fok, fkeys := read(true)
	if !fok {
		return false
	}
	gs, gp, gok, gkeys := read(false)
	if !gok {
		t.Fatalf("%q: fastObject took it, object refuses it", text)
	}
	if !slices.Equal(fs, gs) || fp != gp {
		t.Fatalf("%q: fastObject %v ending at %d, object %v ending at %d", text, fs, fp, gs, gp)
	}
	if !slices.Equal(fkeys, gkeys) {
		t.Fatalf("%q: fastObject learnt keys %v, object %v", text, fkeys, gkeys)
	}
	return true
}

// Every form the fast scanner hands back to the general one, at each
// place it can meet it, and the forms it reads itself: the two agree on
// the values (checkFastAgrees) and the row is the one DecodeObject gives
// (checkJSONRowAgrees); each text goes the way its case says.
func TestFastObjectFallbackEdges(t *testing.T) {
	long := strings.Repeat("abcdefgh", 3)
	cases := []struct {
		text string
		fast bool
	}{
		{`{"i":1,"f":2.5,"s":"x","b":true,"t":"2026-01-01T00:00:00Z"}`, true},
		{` { "i" : 1 ,	"s" :` + "\r\n" + ` "x" } `, true},
		{`{}`, true}, {` {} `, true},
		{`{"i": 1} trailing`, true},
		{`{"other": 1, "i": 2, "another": "x"}`, true},
		{`{"i": 1, "i": 2}`, true},
		{`{"s": null, "b": false, "i": -0.5e+3}`, true},
		{`{"s": "` + long + `caf\u00e9` + long + `"}`, false},
		{"{\"s\": \"" + long + "caf\xc3\xa9" + long + "\"}", true},
		{"{\"s\": \"caf\xc3\xa9\"}", true},
		{"{\"s\": \"" + long + "\xe2\x82\xac\"}", true},
		{`{"s": "` + long + `"}`, true},
		// An escape in a value, in a key; a nested value; non-ASCII in a key.
		{`{"s": "a\"b"}`, false}, {`{"s": "` + long + `\n"}`, false}, {`{"s": "abc\u00e9"}`, false},
		{`{"\u0069": 3}`, false}, {`{"x": {"i": 1}, "i": 2}`, false}, {`{"x": [1, 2], "i": 2}`, false},
		{"{\"caf\xc3\xa9\": 1, \"i\": 2}", false},
		// Invalid UTF-8 in a string, short and a word long; a control byte.
		{"{\"s\": \"\xff\"}", false}, {"{\"s\": \"" + long + "\xc3\"}", false}, {"{\"s\": \"a\x01b\"}", false},
		{"{\"s\": \"" + long + "\x1f\"}", false},
		// Syntax errors at each step, and no end.
		{`null`, false}, {`[1]`, false}, {``, false}, {`{`, false}, {`{"i"`, false}, {`{"i" 1}`, false},
		{`{"i":}`, false}, {`{"i": 1,}`, false}, {`{"i": 1`, false}, {`{"i": 1 2}`, false}, {`{i: 1}`, false},
		{`{"s": "abc`, false}, {`{"s": "` + long, false}, {`{"i": tru}`, false}, {`{"i": nul}`, false},
		{`{"i": fals}`, false}, {`{"i": -}`, false}, {`{"i": 01}`, false}, {`{"i": 1.}`, false}, {`{"i": 1e}`, false},
		{`{"i": 1e+}`, false}, {`{"i": .5}`, false}, {`{"i": +1}`, false}, {"{\"i\":\v1}", false},
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, before := range []string{jsonRowSeeds[0], `{"s": "x", "i": 1}`, `{}`} {
		for _, c := range cases {
			if got := checkFastAgrees(t, before, c.text); got != c.fast {
				t.Errorf("after %q, %q: fastObject took it: %v, want %v", before, c.text, got, c.fast)
			}
			checkJSONRowAgrees(t, mem, c.text)
		}
	}
}

// A key that is not the last object's at its place is read by the fast
// scanner too (looked up and remembered), and the next object in that
// order takes the remembered key.
func TestFastObjectLearnsKeyOrder(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "b", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	d := newJSONRow(schema)
	for _, text := range []string{`{"a":1,"b":2}`, `{"b":3,"x":0,"a":4}`, `{"b":5,"x":0,"a":6}`} {
		if err := d.decode([]byte(text)); err != nil {
			t.Fatal(err)
		}
	}
	want := []jsonKey{{"b", 1}, {"x", -1}, {"a", 0}}
	if !slices.Equal(d.keys, want) {
		t.Fatalf("keys %v, want %v", d.keys, want)
	}
	if d.cells[0].i != 6 || d.cells[1].i != 5 {
		t.Fatalf("cells %v, want a 6, b 5", d.cells)
	}
}

// plainASCII and plainString stop where the byte table says, at every
// place in a word and past the last whole word.
func TestPlainScansAgreeWithTable(t *testing.T) {
	for n := 0; n <= 20; n++ {
		for at := 0; at <= n; at++ {
			for _, stop := range []byte{'"', '\\', 0x01, 0x1f, 0x80, 0xc3, 0xff, 0x7f, ' '} {
				b := []byte(strings.Repeat("x", n) + `"`)
				if at < n {
					b[at] = stop
				}
				want := 0
				for want < len(b) && jsonPlain[b[want]] {
					want++
				}
				if got := plainASCII(b, 0); got != want {
					t.Fatalf("plainASCII(%q) = %d, want %d", b, got, want)
				}
				end, ok := plainString(b, 0)
				wantEnd, wantOK := -1, false
				for i, c := range b {
					if c == '"' || c == '\\' || c < 0x20 {
						wantEnd, wantOK = i, c == '"'
						break
					}
				}
				if wantOK && !utf8.Valid(b[:wantEnd]) {
					wantOK = false
				}
				if ok != wantOK || ok && end != wantEnd {
					t.Fatalf("plainString(%q) = %d, %v; want %d, %v", b, end, ok, wantEnd, wantOK)
				}
			}
		}
	}
}

// The minute cache reads exactly what parseCSVTime reads, in every unit:
// each seed, every one-byte change of it and every prefix, each read
// after the seed itself (the cache set) and after another minute.
func TestMinuteCacheAgreesWithParseCSVTime(t *testing.T) {
	seeds := []string{"2026-01-01T00:00:00.0001Z", "2026-01-01 10:00:00.123456789", "2024-02-29T23:59:59Z",
		"2026-12-31T23:59:59.999999999Z", "2026-01-01T00:00:00", "2026-01-01T00:00:00+01:00", "1969-12-31T23:59:59.5Z",
		"2026-06-15 12:30", "2026-06-15", "2300-01-01T00:00:00Z", "2026-01-01T00:00:07.1234567891Z"}
	units := []arrow.TimeUnit{arrow.Second, arrow.Millisecond, arrow.Microsecond, arrow.Nanosecond}
	check := func(before, s string) {
		for _, u := range units {
			var c minuteCache
			c.parse([]byte(before), u)
			got, gotOK := c.parse([]byte(s), u)
			want, wantOK := parseCSVTime([]byte(s), u)
			if got != want || gotOK != wantOK {
				t.Fatalf("after %q, %q in %v: %v %v, parseCSVTime %v %v", before, s, u, got, gotOK, want, wantOK)
			}
		}
	}
	bytes := []byte("0123456789:-.TZ +x\x00\xff")
	for _, seed := range seeds {
		for _, before := range []string{seed, "2020-05-05T05:05:05Z"} {
			check(before, seed)
			for i := range len(seed) {
				check(before, seed[:i])
				for _, b := range bytes {
					m := []byte(seed)
					m[i] = b
					check(before, string(m))
				}
			}
		}
	}
}

// Decoding a message of the common form allocates nothing per message:
// the builders' buffers grow (or are reserved) per batch, not per row.
func TestAppendJSONAllocatesNothingPerMessage(t *testing.T) {
	schema, msgs := bidMessages()
	read := arrow.NewSchema([]arrow.Field{schema.Field(0), schema.Field(2), schema.Field(3), schema.Field(5)}, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rb := NewRowBuilder(mem, read)
	defer rb.Release()
	for _, m := range msgs[:100] { // the keys' order learnt, the builders made
		if err := rb.AppendJSON(m); err != nil {
			t.Fatal(err)
		}
	}
	i := 100
	allocs := testing.AllocsPerRun(2000, func() {
		if err := rb.AppendJSON(msgs[i%len(msgs)]); err != nil {
			t.Fatal(err)
		}
		i++
	})
	// Amortised: the builders double a few times over 2,000 rows.
	if allocs >= 0.05 {
		t.Fatalf("%.3f allocations a message, want none", allocs)
	}
}
