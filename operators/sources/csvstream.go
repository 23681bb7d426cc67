package sources

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// csvStream reads a stream's CSV file in order into records of exactly the
// batch's rows (the last one shorter), typed by csvTyped's rules: each
// unquoted line is split at its commas and its read fields parsed from the
// bytes in place, no string per field, no []any row. A line the typed rules
// refuse (a field they do not read, too few fields) is read by the scanner
// and TextValue alone, into the same builders, so it gives the row or the
// error, at its line, that the scanner gives; from the first quote on, the
// scanner reads the rest of the file (a quoted field may hold a line break,
// so lines are no longer records).
//
// Why not the table's parallel typed read: its chunks end records short
// wherever a chunk ends, and a stream's records are its batches (the
// watermark advances per record). Why not the scanner: a string per field,
// a boxed value per cell and TextValue's conversions were most of a Nexmark
// worker's CPU (BenchmarkScanStreamCSV).
type csvStream struct {
	c     *CSVReader
	src   io.Reader
	buf   []byte // read from src; data[pos:] not yet taken
	pos   int
	base  int64 // file offset of buf[0]
	eof   bool
	line  int // file line of the next line taken
	b     *typedBuilders
	cells []typedCell
	bits  []int // an integer column's width (64 for others)
}

// typedCell is one read field, parsed but not yet appended: a row is
// appended only once every read field of it parsed.
type typedCell struct {
	null bool
	i    int64
	f    float64
	b    []byte
}

func newCSVStream(c *CSVReader, mem memory.Allocator) *csvStream {
	size, rows := int64(csvBuffer), c.batch
	if left, ok := bytesLeft(c.f, c.r.off); ok {
		// No larger than what is left to read, nor a batch reserved for
		// more rows than it can hold (a row takes at least a value and a
		// line break).
		size = max(16, min(size, left+1))
		rows = int(min(int64(rows), left/2+1))
	}
	s := &csvStream{c: c, src: io.NewSectionReader(c.f, c.r.off, 1<<62), base: c.r.off, line: c.r.line + 1,
		buf: make([]byte, 0, size), cells: make([]typedCell, len(c.plan.kinds)), bits: make([]int, len(c.plan.kinds))}
	for i, f := range c.schema.Fields() {
		s.bits[i] = 64
		if w, ok := f.Type.(arrow.FixedWidthDataType); ok && c.plan.kinds[i] == csvInt {
			s.bits[i] = w.BitWidth()
		}
	}
	s.b = c.plan.newBuilders(mem, rows)
	return s
}

// next returns the next line without its line break, its file offset and
// line number; nil at the end of the file.
func (s *csvStream) next() ([]byte, int64, int, error) {
	for {
		data := s.buf[s.pos:]
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			s.pos += i + 1
			s.line++
			return data[:i], s.base + int64(s.pos-i-1), s.line - 1, nil
		}
		if s.eof {
			if len(data) == 0 {
				return nil, 0, 0, nil
			}
			s.pos = len(s.buf)
			s.line++
			return data, s.base + int64(s.pos-len(data)), s.line - 1, nil
		}
		// Keep the partial line, make room (a line longer than the buffer
		// grows it) and read more.
		n := copy(s.buf, data)
		s.base += int64(s.pos)
		s.buf, s.pos = s.buf[:n], 0
		if n == cap(s.buf) {
			if s.c.maxLine > 0 && n >= s.c.maxLine {
				return nil, 0, 0, lineTooLong(s.line, s.c.maxLine)
			}
			s.buf = append(s.buf, make([]byte, cap(s.buf))...)[:n]
		}
		m, err := s.src.Read(s.buf[n:cap(s.buf)])
		s.buf = s.buf[:n+m]
		if errors.Is(err, io.EOF) {
			s.eof = true
		} else if err != nil {
			return nil, 0, 0, err
		}
	}
}

// read reads up to one batch of rows; nil at the end of the file. After it
// handed over to the scanner (a quote), c.stream is nil and c.r the scanner.
func (s *csvStream) read() (arrow.Record, error) {
	c := s.c
	for s.b.n < c.batch {
		line, off, no, err := s.next()
		if err != nil {
			return nil, c.fileErr(s.line, err)
		}
		if line == nil {
			break
		}
		if bytes.IndexByte(line, '"') >= 0 {
			// The scanner reads the rest, this line first, into this batch.
			c.stream, c.sequential = nil, true
			c.r = NewCSVScanner(io.NewSectionReader(c.f, off, 1<<62))
			c.r.line, c.r.maxLine = no-1, c.maxLine
			b := &batcher{schema: c.schema, bs: s.b.bs, n: s.b.n}
			s.b = nil // the batcher's now
			return c.scanInto(b, c.r, false)
		}
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if len(line) == 0 {
			continue // a blank line, which the scanner skips too
		}
		if s.parse(line) {
			s.append()
			continue
		}
		// The scanner and TextValue decide the line, into this batch.
		sc := NewCSVScanner(bytes.NewReader(line))
		sc.line = no - 1
		rec, at, err := sc.Read()
		b := &batcher{schema: c.schema, bs: s.b.bs, n: s.b.n}
		err = c.add(b, rec, at, err, make([]any, len(c.cols)))
		s.b.n = b.n
		if err != nil {
			return nil, err
		}
	}
	if s.b.n == 0 {
		return nil, nil
	}
	return s.b.finish(c.schema), nil
}

// parse reads line's read fields into s.cells; false: one the typed rules
// leave to TextValue, or too few fields.
func (s *csvStream) parse(line []byte) bool {
	p := s.c.plan
	last := len(p.at) - 1
	for f := 0; f <= last; f++ {
		if line == nil {
			return false
		}
		var fld []byte
		if i := bytes.IndexByte(line, ','); i >= 0 {
			fld, line = line[:i], line[i+1:]
		} else {
			fld, line = line, nil
		}
		c := p.at[f]
		if c < 0 {
			continue
		}
		cell := &s.cells[c]
		*cell = typedCell{null: len(fld) == 0}
		if cell.null {
			continue // an unquoted empty field is NULL in every type
		}
		switch p.kinds[c] {
		case csvInt:
			v, ok := parseCSVInt(fld)
			if !ok || s.bits[c] < 64 && (v >= 1<<(s.bits[c]-1) || v < -(1<<(s.bits[c]-1))) {
				return false
			}
			cell.i = v
		case csvFloat:
			v, err := strconv.ParseFloat(unsafe.String(&fld[0], len(fld)), 64)
			if err != nil {
				return false
			}
			cell.f = v
		case csvString:
			if !utf8.Valid(fld) {
				return false
			}
			cell.b = fld
		case csvBool:
			switch string(fld) {
			case "1", "t", "T", "true", "TRUE", "True":
				cell.i = 1
			case "0", "f", "F", "false", "FALSE", "False":
			default:
				return false
			}
		case csvTime:
			ts, ok := parseCSVTime(fld, s.b.units[c])
			if !ok {
				return false
			}
			cell.i = int64(ts)
		}
	}
	return true
}

// append appends the parsed row.
func (s *csvStream) append() {
	b := s.b
	for c, cell := range s.cells {
		if cell.null {
			b.bs[c].AppendNull()
			continue
		}
		switch s.c.plan.kinds[c] {
		case csvInt:
			b.ints[c](cell.i)
		case csvFloat:
			if x := b.f64[c]; x != nil {
				x.Append(cell.f)
			} else {
				b.f32[c].Append(float32(cell.f))
			}
		case csvString:
			b.strs[c].BinaryBuilder.Append(cell.b)
		case csvBool:
			b.bools[c].Append(cell.i == 1)
		case csvTime:
			b.times[c].Append(arrow.Timestamp(cell.i))
		}
	}
	b.n++
}

// close releases the batch in progress.
func (s *csvStream) close() {
	if s.b != nil {
		s.b.release()
		s.b = nil
	}
}
