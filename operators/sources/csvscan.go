package sources

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
)

// CSVField is one field of a CSV record and whether it was quoted: the NULL
// rule needs to tell an empty field from a quoted "" (encoding/csv cannot).
type CSVField struct {
	Text   string
	Quoted bool
}

// CSVScanner splits RFC 4180 CSV (comma, double quotes, "" inside quotes,
// line breaks inside quotes, CRLF or LF) into records, counting lines. Every
// CSV path reads through it (files, streams, NATS messages), so they share
// one rule for empty fields (see TextValue).
type CSVScanner struct {
	r    *bufio.Reader
	line int   // lines consumed so far
	off  int64 // bytes consumed so far: where the next record starts, once one was read
	buf  strings.Builder
	// byteWise turns off the line at a time path (benchmarks and tests
	// compare the two).
	byteWise bool
	// maxLine, when set, bounds a record's bytes (OpenCSVLimited).
	maxLine, recordBytes int
}

// ErrLineTooLong: a line longer than the reading query's memory. A line is
// held whole to be parsed, outside the query's charged memory, so a file
// of one 300 MB line grew a worker 300 MB beside a 16 MiB limit (and one
// with no line break at all would grow it until it died).
var ErrLineTooLong = fmt.Errorf("%w: a line longer than the query's memory limit", dataflow.ErrMemory)

// tooLong reports whether the record read so far (the fields before, the
// field being read) passed maxLine.
func (s *CSVScanner) tooLong() bool {
	return s.maxLine > 0 && s.recordBytes+s.buf.Len() > s.maxLine
}

func (s *CSVScanner) lineErr() error { return lineTooLong(s.line+1, s.maxLine) }

// lineTooLong is ErrLineTooLong for line, past bound bytes.
func lineTooLong(line, bound int) error {
	return fmt.Errorf("%w (line %d is longer than %s)", ErrLineTooLong, line, dataflow.Bytes(int64(bound)))
}

func (s *CSVScanner) readByte() (byte, error) {
	c, err := s.r.ReadByte()
	if err == nil {
		s.off++
	}
	return c, err
}

// ErrCSVSyntax: a record that is not CSV (a quote left open, a bare quote in
// an unquoted field, text after a closing quote). The error wraps it with
// the line.
var ErrCSVSyntax = errors.New("CSV syntax")

// CSVSyntaxError is a record that is not CSV, at Line (where it starts, for
// a quote left open).
type CSVSyntaxError struct {
	Line int
	Msg  string
}

func (e *CSVSyntaxError) Error() string        { return e.Msg }
func (e *CSVSyntaxError) Is(target error) bool { return target == ErrCSVSyntax }

// NewCSVScanner reads records from r.
func NewCSVScanner(r io.Reader) *CSVScanner {
	size := csvBuffer
	if n, ok := r.(interface{ Len() int }); ok {
		// A reader over bytes in memory (a message) says how many are
		// left: a buffer larger than that is never filled, and 64 KiB
		// allocated and cleared per message of a hundred bytes was most
		// of what decoding a CSV message cost (BenchmarkCSVMessages).
		size = min(size, n.Len()+1) // bufio's floor is 16
	} else if f, ok := r.(*os.File); ok {
		// So does a file: a stream over 20,000 small files (a glob's
		// partitions, all open at once) took 64 KiB each.
		if left, ok := bytesLeft(f, 0); ok {
			size = int(min(int64(size), left+1))
		}
	}
	return &CSVScanner{r: bufio.NewReaderSize(r, size)}
}

// bytesLeft is how much of regular file f lies past off; false when f is
// not one (a pipe, a device) or cannot be stat'ed. A reader sizes its
// buffers by it: a glob's partitions are all read at once, so a buffer
// larger than its file is paid once per file.
func bytesLeft(f *os.File, off int64) (int64, bool) {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return 0, false
	}
	return max(0, fi.Size()-off), true
}

// csvBuffer is a scanner's buffer: a line that fits is taken from it at
// once.
const csvBuffer = 1 << 16

// Read returns the next record and the line it starts on; io.EOF at the
// end. A syntax error (wrapping ErrCSVSyntax) names its line and leaves the
// scanner at the start of the next record, so a caller may skip the record
// and go on. Blank lines are skipped.
func (s *CSVScanner) Read() ([]CSVField, int, error) {
	for {
		start := s.line + 1
		fields, err := s.record()
		if err != nil {
			if errors.Is(err, io.EOF) && fields == nil {
				return nil, start, io.EOF
			}
			if !errors.Is(err, io.EOF) {
				return nil, start, err
			}
		}
		if len(fields) == 1 && !fields[0].Quoted && fields[0].Text == "" {
			if err != nil { // io.EOF after a final blank line
				return nil, start, io.EOF
			}
			continue
		}
		return fields, start, nil
	}
}

// record reads one record; io.EOF with nil fields means no more input.
func (s *CSVScanner) record() ([]CSVField, error) {
	if fields := s.line1(); fields != nil {
		return fields, nil
	}
	var fields []CSVField
	s.recordBytes = 0
	for {
		f, end, err := s.field()
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if errors.Is(err, io.EOF) && fields == nil && !f.Quoted && f.Text == "" && !end {
			return nil, io.EOF
		}
		fields = append(fields, f)
		s.recordBytes += len(f.Text) + 1
		if end || errors.Is(err, io.EOF) {
			s.line++
			return fields, err
		}
	}
}

// line1 reads a record that is a whole line without quotes in the reader's
// buffer: split at its commas, its fields are those field would read one
// byte at a time (the last without a trailing CR), from one string. Why: a
// byte at a time through bufio was most of a CSV stream's CPU. nil: no such
// line (a quote, a line longer than the buffer, the input's last line
// without a line break): field reads it.
func (s *CSVScanner) line1() []CSVField {
	if s.byteWise {
		return nil
	}
	if s.r.Buffered() == 0 {
		if _, err := s.r.Peek(1); err != nil {
			return nil
		}
	}
	data, _ := s.r.Peek(s.r.Buffered())
	i := bytes.IndexByte(data, '\n')
	if i < 0 || bytes.IndexByte(data[:i], '"') >= 0 {
		return nil
	}
	text := string(bytes.TrimSuffix(data[:i], []byte("\r")))
	fields := make([]CSVField, 0, strings.Count(text, ",")+1)
	for {
		j := strings.IndexByte(text, ',')
		if j < 0 {
			fields = append(fields, CSVField{Text: text})
			break
		}
		fields = append(fields, CSVField{Text: text[:j]})
		text = text[j+1:]
	}
	_, _ = s.r.Discard(i + 1)
	s.off += int64(i + 1)
	s.line++
	return fields
}

// field reads one field, byte by byte: the delimiters are ASCII, which never
// occurs inside a UTF-8 sequence, and invalid UTF-8 must reach TextValue as
// it is (a rune reader would turn it into U+FFFD); end says it closed its record (a line break).
func (s *CSVScanner) field() (CSVField, bool, error) {
	s.buf.Reset()
	c, err := s.readByte()
	if err != nil {
		return CSVField{}, false, err
	}
	if c != '"' {
		for {
			switch c {
			case ',':
				return CSVField{Text: s.buf.String()}, false, nil
			case '\n':
				return CSVField{Text: strings.TrimSuffix(s.buf.String(), "\r")}, true, nil
			case '"':
				s.skipLine(false)
				return CSVField{}, false, &CSVSyntaxError{Line: s.line, Msg: `bare " in an unquoted field (quote the field and double the quote)`}
			}
			s.buf.WriteByte(c)
			if s.tooLong() {
				return CSVField{}, false, s.lineErr()
			}
			if c, err = s.readByte(); err != nil {
				return CSVField{Text: strings.TrimSuffix(s.buf.String(), "\r")}, true, err
			}
		}
	}
	startLine := s.line + 1
	for {
		c, err := s.readByte()
		if err != nil {
			s.line++
			return CSVField{}, false, &CSVSyntaxError{Line: startLine, Msg: "quoted field not closed before the end of the input"}
		}
		if c == '\n' {
			s.line++
		}
		if c != '"' {
			s.buf.WriteByte(c)
			if s.tooLong() {
				return CSVField{}, false, s.lineErr()
			}
			continue
		}
		next, err := s.readByte()
		switch {
		case err != nil:
			return CSVField{Text: s.buf.String(), Quoted: true}, true, err
		case next == '"':
			s.buf.WriteByte('"')
		case next == ',':
			return CSVField{Text: s.buf.String(), Quoted: true}, false, nil
		case next == '\n':
			return CSVField{Text: s.buf.String(), Quoted: true}, true, nil
		case next == '\r':
			if n2, err := s.readByte(); err != nil || n2 == '\n' {
				return CSVField{Text: s.buf.String(), Quoted: true}, true, err
			}
			fallthrough
		default:
			s.skipLine(false)
			return CSVField{}, false, &CSVSyntaxError{Line: s.line, Msg: "text after the closing quote of a field"}
		}
	}
}

// skipLine drops the rest of the current line (a record that failed).
func (s *CSVScanner) skipLine(bool) {
	s.line++
	for {
		c, err := s.readByte()
		if err != nil || c == '\n' {
			return
		}
	}
}

// TextValue converts one CSV field to the Go value for type t under the rule
// of PostgreSQL's COPY: an unquoted empty field is NULL in every column
// type, a quoted "" is the empty string (which only a VARCHAR column takes).
// Text that is not valid UTF-8 is refused: Arrow strings must be UTF-8.
func TextValue(f CSVField, t arrow.DataType) (any, error) {
	if f.Text == "" {
		if !f.Quoted {
			return nil, nil
		}
		if t.ID() != arrow.STRING {
			return nil, fmt.Errorf("a quoted empty string is not a %s (leave the field empty for NULL)", t)
		}
		return "", nil
	}
	if !utf8.ValidString(f.Text) {
		return nil, ErrInvalidUTF8
	}
	return convert(f.Text, t)
}

// ErrInvalidUTF8: text that is not UTF-8 where a string must be (Arrow's
// contract for string columns), wrapped with file and row.
var ErrInvalidUTF8 = errors.New("invalid UTF-8")
