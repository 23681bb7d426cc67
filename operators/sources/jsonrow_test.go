package sources

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// jsonRowSchema has every fast case and some that are convert's alone, and
// a column named twice.
var jsonRowSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "t", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
	{Name: "tn", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "m", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "small", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "i", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

var jsonRowSeeds = []string{
	`{"i": 1, "f": 2.5, "s": "x", "b": true, "t": "2026-01-01T00:00:00.0001Z", "tn": "2026-01-01 10:00:00.123456789", "d": "2026-02-03", "m": 12.34, "small": 7}`,
	`{"i": -9223372036854775808, "f": 1e3, "s": 12, "b": "TRUE", "t": "2026-01-01T00:00:00+01:00", "m": "1.005"}`,
	`{"i": "42", "f": "1.5", "s": "a\"b\\u00e9\n", "b": false, "t": 1700000000.5, "small": 3000000000}`,
	`{"i": 1.0}`, `{"i": 1e2}`, `{"i": 123456789012345678901}`, `{"f": 1e999}`, `{"s": {"a": [1, 2, {"b": null}]}}`,
	`{"s": [true, false, null]}`, `{"i": null, "s": null, "t": ""}`, `{"s": ""}`, `{"i": ""}`, `{"i": " 5 "}`,
	`{"i": 1, "i": 2}`, `{"\u0069": 3}`, `{"other": {"deep": [1, "x"]}, "i": 4}`, `{}`, ` { "i" : 5 } `, `{"i": 5} trailing`,
	`null`, `[1]`, `5`, `"x"`, `{"i": 01}`, `{"i": -}`, `{"i": 1.}`, `{"i": .5}`, `{"i": +1}`, `{"i": tru}`, `{"i": nul}`,
	`{"i" 1}`, `{"i": 1,}`, `{"i": 1`, `{i: 1}`, `{"s": "a` + "\x01" + `b"}`, `{"s": "\x"}`, `{"s": "\u12G4"}`, "{\"s\": \"\xff\"}",
	`{"t": "2026-13-01T00:00:00Z"}`, `{"t": "2026-02-29T00:00:00Z"}`, `{"t": "2024-02-29T23:59:59.999999999Z"}`, `{"t": "2026-01-01T24:00:00Z"}`,
	`{"t": "2026-01-01 00:00:00Z"}`, `{"t": "2026-01-01T00:00:00.Z"}`, `{"t": " 2026-01-01 "}`, `{"tn": "2300-01-01T00:00:00Z"}`,
	`{"b": 1}`, `{"b": "yes"}`, `{"s": true}`, `{"s": -0.5e-3}`, `{"f": -0}`, `{"m": 123456789.123}`, `{"d": 0}`,
	`{"s": "\ud800"}`, `{"x": [[[[[]]]]], "i": 9}`, `{"i": 1}{"i": 2}`,
	`{"i": 1, "f`, `{"i"`, `{"i": 1, "f": 2.5, "s"}`, `{"i": 1, "f": 2.5, "s": "x", "b"`,
}

// jsonRowBadUTF8 has invalid UTF-8 everywhere the scanner may meet it (a
// read string, an unread one, a key, a nested value, between tokens, after
// the object): each is refused as ErrInvalidUTF8, as when the whole text was
// checked first. jsonRowGoodUTF8 has valid multi-byte text across word
// boundaries.
var (
	jsonRowBadUTF8 = []string{"{\"s\": \"abcdefgh\xff\"}", "{\"x\": \"\xc3\", \"i\": 1}", "{\"\xe9\": 1}",
		"{\"x\": [\"\xed\xa0\x80\"], \"i\": 1}", "{\"i\": 1\xff}", "{\"i\": 1} \xff", "\xff{\"i\": 1}",
		"{\"s\": \"\xc3\"x}", "{\"s\": \"1234567\xf0\x9f\x98\"}"}
	jsonRowGoodUTF8 = []string{"{\"s\": \"1234567\u00e9\u00e9 caf\u00e9\"}", "{\"s\": \"1234567\xc3\xa9\xf0\x9f\x98\x80abcdefgh\xc3\xa9\", \"i\": 2}",
		"{\"caf\xc3\xa9\": \"\xe2\x82\xac\", \"i\": 3}", "{\"i\": 4} \xc3\xa9"}
)

// checkJSONRowAgrees decodes text with AppendJSON and with DecodeObject +
// AppendObject: both refuse it (as a bad row) or both give the same row.
//
// The text is decoded after another object (jsonRowSeeds[0], its keys in
// another order) and then again: AppendJSON's keys looked up by the last
// object's order agree whether they match it or not.
func checkJSONRowAgrees(t *testing.T, mem memory.Allocator, text string) {
	t.Helper()
	fast, slow := NewRowBuilder(mem, jsonRowSchema), NewRowBuilder(mem, jsonRowSchema)
	defer fast.Release()
	defer slow.Release()
	for _, rb := range []*RowBuilder{fast, slow} {
		if err := rb.AppendJSON([]byte(jsonRowSeeds[0])); err != nil {
			t.Fatal(err)
		}
	}
	var errFast, errSlow error
	for range 2 {
		errFast = fast.AppendJSON([]byte(text))
		obj, err := DecodeObject([]byte(text))
		if err == nil {
			err = slow.AppendObject(obj)
		}
		errSlow = err
		if (errFast == nil) != (errSlow == nil) {
			t.Fatalf("%q: AppendJSON says %v, DecodeObject+AppendObject %v", text, errFast, errSlow)
		}
	}
	if errFast != nil {
		if !errors.Is(errFast, ErrBadRow) {
			t.Fatalf("%q: error of no kind: %v", text, errFast)
		}
		if fast.Len() != 1 {
			t.Fatalf("%q: a refused row was appended", text)
		}
		return
	}
	a, b := fast.Finish(), slow.Finish()
	defer a.Release()
	defer b.Release()
	if !array.RecordEqual(a, b) {
		t.Fatalf("%q: AppendJSON %v, DecodeObject+AppendObject %v", text, a, b)
	}
}

// TestAppendJSONAgreesWithDecodeObject: the direct decoder accepts and
// converts exactly what the map decoder did, its fast cases and the ones it
// hands to convert.
func TestAppendJSONAgreesWithDecodeObject(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, s := range jsonRowSeeds {
		checkJSONRowAgrees(t, mem, s)
	}
	for _, s := range append(jsonRowBadUTF8, jsonRowGoodUTF8...) {
		checkJSONRowAgrees(t, mem, s)
	}
	rb := NewRowBuilder(mem, jsonRowSchema)
	defer rb.Release()
	for _, s := range jsonRowBadUTF8 {
		if err := rb.AppendJSON([]byte(s)); !errors.Is(err, ErrInvalidUTF8) {
			t.Errorf("%q: %v, want ErrInvalidUTF8", s, err)
		}
	}
	deep := strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1)
	checkJSONRowAgrees(t, mem, `{"x": `+deep+`}`)
}

// TestAppendJSONKeysInAnyOrder: one builder reads objects whose keys come
// in changing orders, with undeclared keys among them and a key given
// twice, as the map decoder does (the keys are looked up by the last
// object's order first).
func TestAppendJSONKeysInAnyOrder(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	texts := []string{
		`{"i": 1, "s": "a", "t": "2026-01-01T00:00:00Z"}`,
		`{"i": 2, "s": "b", "t": "2026-01-01T00:00:01Z"}`,
		`{"s": "c", "i": 3, "t": "2026-01-01T00:00:02Z"}`,
		`{"x": 0, "i": 4, "s": "d"}`,
		`{"i": 5, "x": 0, "s": "e", "f": 1.5}`,
		`{"i": 6, "s": "f", "i": 7}`,
		`{"s": "g"}`,
		`{"i": 8, "s": "h", "t": "2026-01-01T00:00:03Z"}`,
		// Keys the last object's bytes start, or spell escaped, or
		// leave empty.
		`{"is": 9, "s": "i"}`,
		`{"i": 10, "st": "x", "s": "j"}`,
		`{"\u0069": 11, "s": "k"}`,
		`{"": 0, "i": 12}`,
		`{"": 0, "i": 13, "s": "l"}`,
	}
	fast, slow := NewRowBuilder(mem, jsonRowSchema), NewRowBuilder(mem, jsonRowSchema)
	for _, text := range texts {
		if err := fast.AppendJSON([]byte(text)); err != nil {
			t.Fatal(err)
		}
		obj, err := DecodeObject([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		if err := slow.AppendObject(obj); err != nil {
			t.Fatal(err)
		}
	}
	a, b := fast.Finish(), slow.Finish()
	defer a.Release()
	defer b.Release()
	if !array.RecordEqual(a, b) {
		t.Fatalf("AppendJSON\n%v\nmap decoder\n%v", a, b)
	}
}

// TestAppendJSONRows: several rows, some refused, come out as one record of
// the accepted ones.
func TestAppendJSONRows(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rb := NewRowBuilder(mem, jsonRowSchema)
	for _, s := range []string{`{"i": 1, "s": "a"}`, `{"i": "x"}`, `{"i": 2, "s": "b"}`, `{"i": 3`} {
		_ = rb.AppendJSON([]byte(s))
	}
	rec := rb.Finish()
	defer rec.Release()
	if rec.NumRows() != 2 {
		t.Fatalf("%d rows, want 2", rec.NumRows())
	}
	is := rec.Column(0).(*array.Int64)
	ss := rec.Column(2).(*array.String)
	if is.Value(0) != 1 || is.Value(1) != 2 || ss.Value(0) != "a" || ss.Value(1) != "b" {
		t.Fatalf("rows %v", rec)
	}
}

// FuzzAppendJSON: on any text, AppendJSON and the map decoder agree.
func FuzzAppendJSON(f *testing.F) {
	for _, s := range jsonRowSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		checkJSONRowAgrees(t, memory.NewGoAllocator(), text)
		checkFastAgrees(t, jsonRowSeeds[0], text)
	})
}

// BenchmarkAppendJSON decodes Nexmark-like bids into Arrow columns with the
// map decoder (DecodeObject + AppendObject, what NATS JSON messages went
// through) and with AppendJSON, in this process; direct/map is the ratio
// of their times per row.
func BenchmarkAppendJSON(b *testing.B) {
	schema, msgs := bidMessages()
	mem := memory.NewGoAllocator()
	run := func(b *testing.B, direct bool) time.Duration {
		start := time.Now()
		for range b.N {
			rb := NewRowBuilder(mem, schema)
			for _, m := range msgs {
				var err error
				if direct {
					err = rb.AppendJSON(m)
				} else {
					var obj map[string]any
					if obj, err = DecodeObject(m); err == nil {
						err = rb.AppendObject(obj)
					}
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			rb.Finish().Release()
		}
		return time.Since(start)
	}
	var took [2]time.Duration
	for i, name := range []string{"map", "direct"} {
		b.Run(name, func(b *testing.B) { took[i] = run(b, i == 1) / time.Duration(b.N) })
	}
	if took[0] > 0 {
		b.Logf("direct/map time per row: %.3f (map %v, direct %v per %d rows)", float64(took[1])/float64(took[0]), took[0], took[1], len(msgs))
	}
}

// BenchmarkRowBuilderReserves decodes 16 batches of 4,096 bids with one
// RowBuilder (as a message source does), its builders sized as the last
// batch (reserved) and grown from nothing (grown), the two in turns so
// that a busy machine slows both alike; reserved/grown is the ratio of
// their times.
func BenchmarkRowBuilderReserves(b *testing.B) {
	schema, msgs := bidMessages()
	mem := memory.NewGoAllocator()
	var took [2]time.Duration
	for range b.N {
		for k := range 2 {
			start := time.Now()
			rb := NewRowBuilder(mem, schema)
			for range 16 {
				if k == 0 {
					rb.lastRows = 0
				}
				for _, m := range msgs {
					if err := rb.AppendJSON(m); err != nil {
						b.Fatal(err)
					}
				}
				rb.Finish().Release()
			}
			took[k] += time.Since(start)
		}
	}
	b.ReportMetric(float64(took[1])/float64(took[0]), "reserved/grown")
}

// BenchmarkAppendJSONColumns decodes 16 batches of 4,096 bids into every
// declared column (all) and into the three a query of auction and price
// reads with its event time (read: what exec asks a NATS source for since
// it narrows a stream's scan), the two in turns; read/all is the ratio of
// their times.
func BenchmarkAppendJSONColumns(b *testing.B) {
	schema, msgs := bidMessages()
	read := arrow.NewSchema([]arrow.Field{schema.Field(0), schema.Field(2), schema.Field(5)}, nil)
	mem := memory.NewGoAllocator()
	var took [2]time.Duration
	for range b.N {
		for k, s := range []*arrow.Schema{schema, read} {
			start := time.Now()
			rb := NewRowBuilder(mem, s)
			for range 16 {
				for _, m := range msgs {
					if err := rb.AppendJSON(m); err != nil {
						b.Fatal(err)
					}
				}
				rb.Finish().Release()
			}
			took[k] += time.Since(start)
		}
	}
	b.ReportMetric(float64(took[1])/float64(took[0]), "read/all")
}

// BenchmarkAppendJSONScanner decodes 16 batches of 4,096 bids into the
// three columns a query of auction and price reads with its event time,
// with the scanner's fast paths (keys by the last object's order, strings
// by table) and without them, in turns; fast/simple is the ratio of their
// times.
func BenchmarkAppendJSONScanner(b *testing.B) {
	schema, msgs := bidMessages()
	read := arrow.NewSchema([]arrow.Field{schema.Field(0), schema.Field(2), schema.Field(5)}, nil)
	mem := memory.NewGoAllocator()
	var took [2]time.Duration
	for range b.N {
		for k := range 2 {
			start := time.Now()
			rb := NewRowBuilder(mem, read)
			rb.json = newJSONRow(read)
			rb.json.simple = k == 0
			for range 16 {
				for _, m := range msgs {
					if err := rb.AppendJSON(m); err != nil {
						b.Fatal(err)
					}
				}
				rb.Finish().Release()
			}
			took[k] += time.Since(start)
		}
	}
	b.ReportMetric(float64(took[1])/float64(took[0]), "fast/simple")
}

// bidMessages are 4,096 Nexmark-like bids as JSON objects and their schema.
func bidMessages() (*arrow.Schema, [][]byte) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "auction", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "bidder", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "price", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "channel", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "url", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "dateTime", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
		{Name: "extra", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	var msgs [][]byte
	for i := range 4096 {
		msgs = append(msgs, fmt.Appendf(nil, `{"auction":%d,"bidder":%d,"price":%d,"channel":"Google","url":"https://www.nexmark.com/abcde/fghij/item.htm?query=1","dateTime":"2026-01-01T00:00:%02d.%04dZ","extra":"qwertyui"}`,
			1000+i%977, 2000+i%911, 100+i*37, i%60, i))
	}
	return schema, msgs
}

// plainWord says of eight bytes at once what jsonPlain says of each: every
// byte value at every position of a word of plain bytes, and random words.
func TestPlainWordAgreesWithTable(t *testing.T) {
	check := func(w [8]byte) {
		want := true
		for _, c := range w {
			want = want && jsonPlain[c]
		}
		if got := plainWord(binary.LittleEndian.Uint64(w[:])); got != want {
			t.Fatalf("%q: plainWord %v, table %v", w, got, want)
		}
	}
	for _, fill := range []byte{'a', ' ', 0x7f, 0x80, 0xff, 0x21} {
		for pos := range 8 {
			for c := range 256 {
				var w [8]byte
				for i := range w {
					w[i] = fill
				}
				w[pos] = byte(c)
				check(w)
			}
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 200_000 {
		var w [8]byte
		for i := range w {
			w[i] = byte(r.IntN(256))
			if r.IntN(3) > 0 {
				w[i] = byte(0x20 + r.IntN(0x60)) // mostly plain
			}
		}
		check(w)
	}
}

// BenchmarkAppendJSONStrings decodes 16 batches of 4,096 bids (short
// strings) and of 4,096 wide objects (900-byte ones, long strings in the
// unread fields) with strings scanned eight bytes a word first (word) and
// a byte at a time by table (bytewise), in turns; word/bytewise is the
// ratio of their CPU times on this goroutine's locked thread (a loaded
// machine moves wall times by more than the difference).
func BenchmarkAppendJSONStrings(b *testing.B) {
	schema, bids := bidMessages()
	read := arrow.NewSchema([]arrow.Field{schema.Field(0), schema.Field(2), schema.Field(5)}, nil)
	wideSchema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "total", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "status", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	var wide [][]byte
	for i := range 4096 {
		wide = append(wide, fmt.Appendf(nil, `{"note":%q,"agent":"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)","status":"shipped","email":"someone.%d@example.com","total":%d.25,"street":"%d Long Winding Road, Apartment 12","id":%d}`,
			strings.Repeat("lorem ipsum dolor ", 20+i%7), i, i, i%500, i))
	}
	mem := memory.NewGoAllocator()
	for _, c := range []struct {
		name   string
		schema *arrow.Schema
		msgs   [][]byte
	}{{"bids", read, bids}, {"wide", wideSchema, wide}} {
		b.Run(c.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var took [2]time.Duration
			for range b.N {
				for k := range 2 {
					start := threadCPU()
					rb := NewRowBuilder(mem, c.schema)
					rb.json = newJSONRow(c.schema)
					rb.json.bytewise = k == 0
					for range 16 {
						for _, m := range c.msgs {
							if err := rb.AppendJSON(m); err != nil {
								b.Fatal(err)
							}
						}
						rb.Finish().Release()
					}
					took[k] += threadCPU() - start
				}
			}
			b.ReportMetric(float64(took[1])/float64(took[0]), "word/bytewise")
		})
	}
}

// threadCPU is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID).
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}

// BenchmarkAppendJSONKeys decodes 4 batches of 4,096 bids into the three
// columns a query of auction and price reads with its event time, each key
// scanned as a string (scanned) and first compared with the last object's
// key at its place (same), in turns; same/scanned is the ratio of their CPU
// times on this goroutine's locked thread.
func BenchmarkAppendJSONKeys(b *testing.B) {
	took := appendJSONTurns(b, func(d *jsonRow, first bool) { d.scanKeys = first })
	b.ReportMetric(float64(took[1])/float64(took[0]), "same/scanned")
	b.ReportMetric(took[1], "same_ns/msg")
}

// BenchmarkAppendJSONFast decodes the same, each object read by the
// general scanner (general) and by fastObject first (fast), in turns;
// fast/general is the ratio of their CPU times on this goroutine's locked
// thread.
func BenchmarkAppendJSONFast(b *testing.B) {
	took := appendJSONTurns(b, func(d *jsonRow, first bool) { d.general = first })
	b.ReportMetric(took[1]/took[0], "fast/general")
	b.ReportMetric(took[1], "fast_ns/msg")
	b.ReportMetric(took[0], "general_ns/msg")
}

// appendJSONTurns decodes 4 batches of 4,096 bids into the columns of
// auction, price and the event time, b.N times in two turns, the decoder
// set up for each by set (first: the first turn), and returns each turn's
// thread CPU in ns per message.
func appendJSONTurns(b *testing.B, set func(d *jsonRow, first bool)) [2]float64 {
	schema, msgs := bidMessages()
	read := arrow.NewSchema([]arrow.Field{schema.Field(0), schema.Field(2), schema.Field(5)}, nil)
	mem := memory.NewGoAllocator()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var took [2]time.Duration
	for range b.N {
		for k := range 2 {
			rb := NewRowBuilder(mem, read)
			rb.json = newJSONRow(read)
			set(rb.json, k == 0)
			start := threadCPU()
			for range 4 {
				for _, m := range msgs {
					if err := rb.AppendJSON(m); err != nil {
						b.Fatal(err)
					}
				}
				rb.Finish().Release()
			}
			took[k] += threadCPU() - start
		}
	}
	n := float64(b.N * 4 * len(msgs))
	return [2]float64{float64(took[0]) / n, float64(took[1]) / n}
}

// BenchmarkAppendJSONVsEncodingJSON decodes 4 batches of 4,096 messages
// into the columns a query reads, with AppendJSON (into Arrow columns) and
// with encoding/json (json.Unmarshal into a struct of the same columns,
// what a user's subscriber would write), in turns on this goroutine's
// locked thread: bids (auction, price and the event time of 7 fields) and
// sensor readings (device, temp, ok and the time of 5, spaces after the
// colons); appendjson/encoding_json is the ratio of their CPU times.
func BenchmarkAppendJSONVsEncodingJSON(b *testing.B) {
	schema, bids := bidMessages()
	bidRead := arrow.NewSchema([]arrow.Field{schema.Field(0), schema.Field(2), schema.Field(5)}, nil)
	type bid struct {
		Auction  int64     `json:"auction"`
		Price    int64     `json:"price"`
		DateTime time.Time `json:"dateTime"`
	}
	readingRead := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
		{Name: "device", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "temp", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
	type reading struct {
		TS     time.Time `json:"ts"`
		Device string    `json:"device"`
		Temp   float64   `json:"temp"`
		OK     bool      `json:"ok"`
	}
	var readings [][]byte
	for i := range 4096 {
		readings = append(readings, fmt.Appendf(nil, `{"seq": %d, "ts": "2026-03-01T00:%02d:%02d.%03dZ", "device": "dev-%04d", "temp": %.3f, "ok": %t}`,
			i, i/60%60, i%60, i%1000, i*7%5000, -20+float64(i%600)/10, i%10 != 0))
	}
	mem := memory.NewGoAllocator()
	for _, c := range []struct {
		name      string
		schema    *arrow.Schema
		msgs      [][]byte
		unmarshal func([]byte) error
	}{
		{"bids", bidRead, bids, func(m []byte) error { var v bid; return json.Unmarshal(m, &v) }},
		{"readings", readingRead, readings, func(m []byte) error { var v reading; return json.Unmarshal(m, &v) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var took [2]time.Duration
			for range b.N {
				start := threadCPU()
				rb := NewRowBuilder(mem, c.schema)
				for range 4 {
					for _, m := range c.msgs {
						if err := rb.AppendJSON(m); err != nil {
							b.Fatal(err)
						}
					}
					rb.Finish().Release()
				}
				took[0] += threadCPU() - start
				start = threadCPU()
				for range 4 {
					for _, m := range c.msgs {
						if err := c.unmarshal(m); err != nil {
							b.Fatal(err)
						}
					}
				}
				took[1] += threadCPU() - start
			}
			n := float64(b.N * 4 * len(c.msgs))
			b.ReportMetric(float64(took[0])/float64(took[1]), "appendjson/encoding_json")
			b.ReportMetric(float64(took[0].Nanoseconds())/n, "appendjson_ns/msg")
			b.ReportMetric(float64(took[1].Nanoseconds())/n, "encoding_json_ns/msg")
		})
	}
}
