package sources

import (
	"bytes"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/internal/arrowx"
)

// csvTyped parses unquoted CSV straight into typed Arrow builders: no
// per-field strings, no []any row, no interface conversions. It reads the
// common shape of a file (digits, decimals, plain timestamps, UTF-8 text)
// and refuses anything else, so that the scanner and TextValue, which hold
// the rules, decide every unusual field: a refused chunk is read again by
// them, which gives the same rows, or the same error at the same line.
type csvTyped struct {
	at     []int // per header position up to the last one read: the schema field it fills, or -1
	kinds  []csvKind
	schema *arrow.Schema
}

type csvKind uint8

const (
	csvInt csvKind = iota
	csvFloat
	csvString
	csvBool
	csvTime
)

// newCSVTyped plans the typed parse of rows whose header position cols[i]
// fills schema field i; nil when a field's type is one it does not parse
// (the scanner reads those files).
func newCSVTyped(schema *arrow.Schema, cols []int) *csvTyped {
	last := -1
	for _, c := range cols {
		last = max(last, c)
	}
	p := &csvTyped{at: make([]int, last+1), kinds: make([]csvKind, len(cols)), schema: schema}
	for i := range p.at {
		p.at[i] = -1
	}
	for i, c := range cols {
		if p.at[c] >= 0 {
			return nil // one header column read twice: leave it to the scanner
		}
		p.at[c] = i
		switch schema.Field(i).Type.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
			p.kinds[i] = csvInt
		case arrow.FLOAT32, arrow.FLOAT64:
			p.kinds[i] = csvFloat
		case arrow.STRING:
			p.kinds[i] = csvString
		case arrow.BOOL:
			p.kinds[i] = csvBool
		case arrow.TIMESTAMP:
			p.kinds[i] = csvTime
		default:
			return nil
		}
	}
	return p
}

// chunkStatus is what the typed parse made of a chunk.
type chunkStatus uint8

const (
	chunkOK      chunkStatus = iota
	chunkRows                // a field it does not read: the scanner reads the chunk again
	chunkQuoted              // a quote: record boundaries are the scanner's to find from here on
	chunkFailed              // reading the file failed (chunk.err)
	chunkDropped             // the reader closed before the chunk was parsed
)

// parse reads data (whole lines) into records of at most batch rows,
// calling pause after each (its query's turn: dataflow.Helper.DoPaused).
func (p *csvTyped) parse(data []byte, mem memory.Allocator, batch int, pause func()) ([]arrow.Record, chunkStatus) {
	if bytes.IndexByte(data, '"') >= 0 {
		return nil, chunkQuoted
	}
	var recs []arrow.Record
	fail := func() ([]arrow.Record, chunkStatus) {
		for _, r := range recs {
			r.Release()
		}
		return nil, chunkRows
	}
	// A refused allocation (the query's budget) panics out of here: the
	// chunk's records made so far go back with its builders, or the
	// budget would go on counting them after the read failed.
	defer func() {
		if r := recover(); r != nil {
			for _, rec := range recs {
				rec.Release()
			}
			panic(r)
		}
	}()
	b := p.newBuilders(mem, min(batch, bytes.Count(data, []byte{'\n'})+1))
	defer b.release()
	last := len(p.at) - 1
	for len(data) > 0 {
		var line []byte
		if nl := bytes.IndexByte(data, '\n'); nl >= 0 {
			line, data = data[:nl], data[nl+1:]
		} else {
			line, data = data, nil
		}
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if len(line) == 0 {
			continue // a blank line, which the scanner skips too
		}
		for f := 0; f <= last; f++ {
			if line == nil {
				return fail() // fewer fields than the columns read
			}
			var fld []byte
			if i := bytes.IndexByte(line, ','); i >= 0 {
				fld, line = line[:i], line[i+1:]
			} else {
				fld, line = line, nil
			}
			if c := p.at[f]; c >= 0 && !b.append(c, p.kinds[c], fld) {
				return fail()
			}
		}
		if b.n++; b.n == batch {
			recs = append(recs, b.finish(p.schema))
			pause()
		}
	}
	if b.n > 0 {
		recs = append(recs, b.finish(p.schema))
	}
	return recs, chunkOK
}

// typedBuilders are one batch's builders, kept typed so appending does not
// go through an interface per value.
type typedBuilders struct {
	bs    []array.Builder
	ints  []func(int64) bool // append an integer if it fits the column's width
	f64   []*array.Float64Builder
	f32   []*array.Float32Builder
	strs  []*array.StringBuilder
	bools []*array.BooleanBuilder
	times []*array.TimestampBuilder
	units []arrow.TimeUnit
	n     int
	mem   memory.Allocator
	cap   int
}

func (p *csvTyped) newBuilders(mem memory.Allocator, capacity int) *typedBuilders {
	k := len(p.kinds)
	b := &typedBuilders{bs: make([]array.Builder, k), ints: make([]func(int64) bool, k), f64: make([]*array.Float64Builder, k),
		f32: make([]*array.Float32Builder, k), strs: make([]*array.StringBuilder, k), bools: make([]*array.BooleanBuilder, k),
		times: make([]*array.TimestampBuilder, k), units: make([]arrow.TimeUnit, k), mem: mem, cap: capacity}
	// A refused reservation (the query's budget) panics out of reset
	// before the caller holds b: the builders made so far go back here.
	defer func() {
		if r := recover(); r != nil {
			b.release()
			panic(r)
		}
	}()
	b.reset(p.schema)
	return b
}

func (b *typedBuilders) reset(schema *arrow.Schema) {
	b.n = 0
	for i, f := range schema.Fields() {
		// Kept before Reserve, which the budget may refuse: release
		// then frees what it had reserved.
		x := array.NewBuilder(b.mem, f.Type)
		b.bs[i] = x
		arrowx.Reserve(x, b.cap)
		switch x := x.(type) {
		case *array.Int8Builder:
			b.ints[i] = func(v int64) bool { x.Append(int8(v)); return v == int64(int8(v)) }
		case *array.Int16Builder:
			b.ints[i] = func(v int64) bool { x.Append(int16(v)); return v == int64(int16(v)) }
		case *array.Int32Builder:
			b.ints[i] = func(v int64) bool { x.Append(int32(v)); return v == int64(int32(v)) }
		case *array.Int64Builder:
			b.ints[i] = func(v int64) bool { x.Append(v); return true }
		case *array.Float64Builder:
			b.f64[i] = x
		case *array.Float32Builder:
			b.f32[i] = x
		case *array.StringBuilder:
			b.strs[i] = x
		case *array.BooleanBuilder:
			b.bools[i] = x
		case *array.TimestampBuilder:
			b.times[i] = x
			b.units[i] = f.Type.(*arrow.TimestampType).Unit
		}
	}
}

// append reads fld into column c; false: a field the typed parse leaves to
// TextValue (the chunk is then read again, so a half-appended row is never
// seen).
func (b *typedBuilders) append(c int, k csvKind, fld []byte) bool {
	if len(fld) == 0 {
		b.bs[c].AppendNull() // an unquoted empty field is NULL in every type
		return true
	}
	switch k {
	case csvInt:
		v, ok := parseCSVInt(fld)
		return ok && b.ints[c](v)
	case csvFloat:
		// The same parse as TextValue's, on the bytes in place.
		v, err := strconv.ParseFloat(unsafe.String(&fld[0], len(fld)), 64)
		if err != nil {
			return false
		}
		if x := b.f64[c]; x != nil {
			x.Append(v)
		} else {
			b.f32[c].Append(float32(v))
		}
	case csvString:
		if !utf8.Valid(fld) {
			return false
		}
		b.strs[c].BinaryBuilder.Append(fld)
	case csvBool:
		switch string(fld) {
		case "1", "t", "T", "true", "TRUE", "True":
			b.bools[c].Append(true)
		case "0", "f", "F", "false", "FALSE", "False":
			b.bools[c].Append(false)
		default:
			return false
		}
	case csvTime:
		ts, ok := parseCSVTime(fld, b.units[c])
		if !ok {
			return false
		}
		b.times[c].Append(ts)
	}
	return true
}

// finish makes the batch's record and the next batch's builders. A
// refused allocation in those (the query's budget) releases the record
// (or the columns made so far),
// which nobody else holds yet, and leaves only the builders made so far
// for release.
func (b *typedBuilders) finish(schema *arrow.Schema) arrow.Record {
	cols := make([]arrow.Array, len(b.bs))
	func() {
		// A column's array may allocate too (a string's last offset),
		// and so be refused: the columns made before it go back.
		defer func() {
			if r := recover(); r != nil {
				for _, c := range cols {
					if c != nil {
						c.Release()
					}
				}
				panic(r)
			}
		}()
		for i, x := range b.bs {
			cols[i] = x.NewArray()
		}
	}()
	rec := array.NewRecord(schema, cols, int64(b.n))
	for _, c := range cols {
		c.Release()
	}
	b.release()
	clear(b.bs)
	defer func() {
		if r := recover(); r != nil {
			rec.Release()
			panic(r)
		}
	}()
	b.reset(schema)
	return rec
}

func (b *typedBuilders) release() {
	for _, x := range b.bs {
		if x != nil {
			x.Release()
		}
	}
}

// parseCSVInt reads [+-]digits of at most 18 digits (no overflow); anything
// else (spaces, longer numbers) is TextValue's.
func parseCSVInt(s []byte) (int64, bool) {
	neg := false
	switch s[0] {
	case '-':
		neg, s = true, s[1:]
	case '+':
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// parseCSVTime reads a timestamp of parseTimeText's layouts into unit;
// false: another layout, or past an int64 of nanoseconds (ParseTime's path
// decides those).
func parseCSVTime(s []byte, unit arrow.TimeUnit) (arrow.Timestamp, bool) {
	secs, ns, ok := parseTimeText(s)
	if !ok {
		return 0, false
	}
	if ts, ok := coarseTimestamp(secs, ns, unit); ok {
		return ts, true
	}
	if unit == arrow.Nanosecond {
		// The year as written (parseTimeText read its four digits).
		if y := int(s[0]-'0')*1000 + int(s[1]-'0')*100 + int(s[2]-'0')*10 + int(s[3]-'0'); y < 1678 || y > 2261 {
			return 0, false
		}
		return arrow.Timestamp(secs*1e9 + int64(ns)), true
	}
	return 0, false
}

// coarseTimestamp is secs and ns (nanoseconds in the second) in unit when
// unit is seconds, milliseconds or microseconds, whose range no four-digit
// year exceeds; false for nanoseconds, whose range the caller checks.
func coarseTimestamp(secs int64, ns int, unit arrow.TimeUnit) (arrow.Timestamp, bool) {
	switch unit {
	case arrow.Second:
		return arrow.Timestamp(secs), true
	case arrow.Millisecond:
		return arrow.Timestamp(secs*1e3 + int64(ns)/1e6), true
	case arrow.Microsecond:
		return arrow.Timestamp(secs*1e6 + int64(ns)/1e3), true
	}
	return 0, false
}
