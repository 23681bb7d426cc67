package sources

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
)

// CSVReader reads a CSV file with a header row. With a schema, columns are
// matched to the header by name (case-insensitive); without one, names come
// from the header and types are inferred from the first rows. Empty fields
// follow TextValue's rule (unquoted: NULL; quoted "": the empty string).
type CSVReader struct {
	// cpu: UseCPU.
	cpu     *dataflow.Helper
	path    string
	f       *os.File
	r       *CSVScanner
	schema  *arrow.Schema
	cols    []int // header position of each schema field
	batch   int
	errs    rowErrors
	pending [][]CSVField // rows read ahead for inference
	lines   []int

	// The parallel typed read (csvparallel.go), from the first record after
	// the header and the rows read for inference; nil plan: the scanner
	// reads every row (a column type csvTyped does not parse).
	plan       *csvTyped
	par        *csvParallel
	cur        []arrow.Record // a chunk's records not handed out yet
	sequential bool           // a quote was seen: the scanner reads the rest
	chunkBytes int
	workers    int // parsing goroutines; 0: one per core

	// A stream's file (OpenCSV) is read in order by csvStream where plan
	// is set: streamed says so, stream is the reader once started.
	streamed bool
	stream   *csvStream
	// maxLine bounds a line's bytes (OpenCSVLimited; 0: none).
	maxLine int
}

// inferRows is how many rows type inference looks at.
const inferRows = 1000

// OpenCSV opens path. schema nil infers one; batch is the rows per record.
// Rows are read in order, batch by batch, as a stream's watermark needs:
// typed where csvTyped's rules read them (csvstream.go), else by the
// scanner.
func OpenCSV(path string, schema *arrow.Schema, batch int, policy OnError, report *Report) (*CSVReader, error) {
	return OpenCSVLimited(path, schema, batch, policy, report, 0)
}

// OpenCSVLimited is OpenCSV with a bound on a line's bytes, the header's
// too (0: none): past it the read fails with ErrLineTooLong. A query's
// reader takes its memory limit (exec), as a line is held whole to be
// parsed.
func OpenCSVLimited(path string, schema *arrow.Schema, batch int, policy OnError, report *Report, maxLine int) (*CSVReader, error) {
	c, err := openCSV(path, schema, batch, policy, report, maxLine)
	if err == nil {
		c.streamed = true
		if len(c.pending) > 0 {
			c.plan = nil // rows read ahead for inference: the scanner reads on
		}
	}
	return c, err
}

// OpenCSVTable opens path as OpenCSV does, for a table: the rows come in
// file order, in records of at most batch rows, parsed on every core by
// csvTyped where it can (csvparallel.go). Records may be shorter than batch,
// which only a stream's watermark would notice.
func OpenCSVTable(path string, schema *arrow.Schema, batch int, policy OnError, report *Report) (*CSVReader, error) {
	return openCSV(path, schema, batch, policy, report, 0)
}

// OpenCSVTableLimited is OpenCSVTable with OpenCSVLimited's bound on a line.
func OpenCSVTableLimited(path string, schema *arrow.Schema, batch int, policy OnError, report *Report, maxLine int) (*CSVReader, error) {
	return openCSV(path, schema, batch, policy, report, maxLine)
}

func openCSV(path string, schema *arrow.Schema, batch int, policy OnError, report *Report, maxLine int) (*CSVReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadFile, err)
	}
	c := &CSVReader{path: path, f: f, r: NewCSVScanner(f), batch: max(batch, 1), errs: rowErrors{policy, report}, maxLine: maxLine}
	c.r.maxLine = maxLine
	rec, line, err := c.r.Read()
	if err != nil {
		f.Close()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: %s: empty file (want a header row)", ErrBadFile, path)
		}
		// Without a header there is no schema: the file, not a row, is bad.
		var se *CSVSyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("%w: %s:%d: header: %w", ErrBadFile, path, se.Line, se)
		}
		return nil, c.fileErr(line, err)
	}
	header := make([]string, len(rec))
	for i, h := range rec {
		if !utf8.ValidString(h.Text) {
			f.Close()
			return nil, fmt.Errorf("%w: %s:%d: header field %d: %w", ErrBadFile, path, line, i+1, ErrInvalidUTF8)
		}
		header[i] = h.Text
	}
	header = headerNames(header)
	if schema == nil {
		if schema, err = c.infer(header); err != nil {
			f.Close()
			return nil, err
		}
	}
	c.schema = schema
	for _, fld := range schema.Fields() {
		pos := -1
		for i, h := range header {
			if strings.EqualFold(h, fld.Name) {
				pos = i
				break
			}
		}
		if pos < 0 {
			f.Close()
			return nil, fmt.Errorf("%w: %s:%d: no column %q in the header (have %s)", ErrBadFile, path, line, fld.Name, strings.Join(header, ", "))
		}
		c.cols = append(c.cols, pos)
	}
	c.plan, c.chunkBytes = newCSVTyped(schema, c.cols), csvChunkBytes
	return c, nil
}

// fileErr names the file and line of a scanner error: a record that is not
// CSV is a bad row (skipped under --on-error skip), anything else a bad file.
func (c *CSVReader) fileErr(line int, err error) error {
	var se *CSVSyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("%w: %s:%d: %w", ErrBadRow, c.path, se.Line, se)
	}
	if errors.Is(err, ErrLineTooLong) {
		return fmt.Errorf("%s:%d: %w", c.path, line, err) // a limit, not the file's fault
	}
	return fmt.Errorf("%w: %s:%d: %v", ErrBadFile, c.path, line, err)
}

// rowErr routes a scanner error: a syntax error by the row policy, a read
// error always to the caller.
func (c *CSVReader) rowErr(line int, err error) error {
	ferr := c.fileErr(line, err)
	if !errors.Is(err, ErrCSVSyntax) {
		return ferr
	}
	return c.errs.handle(ferr)
}

func (c *CSVReader) infer(header []string) (*arrow.Schema, error) {
	for len(c.pending) < inferRows {
		rec, line, err := c.r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if err := c.rowErr(line, err); err != nil {
				return nil, err
			}
			continue
		}
		c.pending = append(c.pending, rec)
		c.lines = append(c.lines, line)
	}
	fields := make([]arrow.Field, len(header))
	for j, h := range header {
		var samples []any
		quotedEmpty := false
		for _, r := range c.pending {
			if j >= len(r) || r[j].Text == "" && !r[j].Quoted {
				continue
			}
			quotedEmpty = quotedEmpty || r[j].Text == ""
			samples = append(samples, r[j].Text)
		}
		t := inferType(samples)
		if quotedEmpty {
			t = arrow.BinaryTypes.String // only a string holds ""
		}
		fields[j] = arrow.Field{Name: h, Type: t, Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}

// Schema is the rows' schema.
func (c *CSVReader) Schema() *arrow.Schema { return c.schema }

// UseCPU runs the parallel parse's chunks as steps of the reading query
// (Source.Open hands it the instance's helper).
func (c *CSVReader) UseCPU(h *dataflow.Helper) { c.cpu = h }

// Next reads up to one batch of rows: the rows read ahead for inference
// through the scanner, then the rest in parallel, typed (csvparallel.go),
// falling back to the scanner where the typed parse declines.
func (c *CSVReader) Next(mem memory.Allocator) (arrow.Record, error) {
	if c.plan == nil || c.sequential {
		return c.scan(mem, c.r, false)
	}
	if c.streamed {
		if c.stream == nil {
			c.stream = newCSVStream(c, mem)
		}
		return c.stream.read()
	}
	if len(c.pending) > 0 {
		if rec, err := c.scan(mem, c.r, true); rec != nil || err != nil {
			return rec, err
		}
	}
	for {
		if len(c.cur) > 0 {
			r := c.cur[0]
			c.cur[0], c.cur = nil, c.cur[1:]
			return r, nil
		}
		if c.par == nil {
			c.par = startCSVParallel(c.f, c.plan, mem, c.batch, c.r.off, c.r.line+1, c.chunkBytes, c.workers, c.cpu, c.maxLine)
		}
		ch := c.par.next()
		if ch == nil {
			return nil, nil
		}
		switch ch.status {
		case chunkOK:
			c.cur = ch.recs
		case chunkRows:
			// No quotes, so its lines are its records: the scanner reads
			// them under the row policy with the lines they have in the file.
			s := NewCSVScanner(bytes.NewReader(ch.data))
			s.line = ch.line - 1
			for {
				rec, err := c.scan(mem, s, false)
				if err != nil {
					return nil, err
				}
				if rec == nil {
					break
				}
				c.cur = append(c.cur, rec)
			}
		case chunkQuoted:
			c.par.stop()
			c.sequential = true
			c.r = NewCSVScanner(io.NewSectionReader(c.f, ch.off, 1<<62))
			c.r.line = ch.line - 1
			return c.scan(mem, c.r, false)
		case chunkFailed:
			if errors.Is(ch.err, dataflow.ErrMemory) {
				return nil, fmt.Errorf("%s:%d: %w", c.path, ch.line, ch.err)
			}
			return nil, fmt.Errorf("%w: %s:%d: %v", ErrBadFile, c.path, ch.line, ch.err)
		}
	}
}

// scan reads up to one batch of rows through scanner s; pendingOnly stops
// at the end of the rows read ahead for inference.
func (c *CSVReader) scan(mem memory.Allocator, s *CSVScanner, pendingOnly bool) (arrow.Record, error) {
	return c.scanInto(newBatcher(mem, c.schema), s, pendingOnly)
}

// scanInto is scan into b, which may hold rows already.
func (c *CSVReader) scanInto(b *batcher, s *CSVScanner, pendingOnly bool) (arrow.Record, error) {
	row := make([]any, len(c.cols))
	for b.n < c.batch && !(pendingOnly && len(c.pending) == 0) {
		var rec []CSVField
		var line int
		var err error
		if len(c.pending) > 0 {
			rec, line = c.pending[0], c.lines[0]
			c.pending, c.lines = c.pending[1:], c.lines[1:]
		} else {
			rec, line, err = s.Read()
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err := c.add(b, rec, line, err, row); err != nil {
			b.discard()
			return nil, err
		}
	}
	return b.finish(), nil
}

// add adds the scanner's record rec at line (or its error err) to b under
// the row policy, converted in row; an error ends the read.
func (c *CSVReader) add(b *batcher, rec []CSVField, line int, err error, row []any) error {
	if err != nil {
		return c.rowErr(line, err)
	}
	if bad := c.convertRow(rec, line, row); bad != nil {
		return c.errs.handle(bad)
	}
	b.add(row)
	return nil
}

func (c *CSVReader) convertRow(rec []CSVField, line int, row []any) error {
	for i, pos := range c.cols {
		if pos >= len(rec) {
			return fmt.Errorf("%w: %s:%d: %d fields, column %q is field %d", ErrBadRow, c.path, line, len(rec), c.schema.Field(i).Name, pos+1)
		}
		v, err := TextValue(rec[pos], c.schema.Field(i).Type)
		if err != nil {
			return fmt.Errorf("%w: %s:%d: column %q: %w", ErrBadRow, c.path, line, c.schema.Field(i).Name, err)
		}
		row[i] = v
	}
	return nil
}

// Close stops the parallel read, releases the records it parsed ahead and
// closes the file.
func (c *CSVReader) Close() error {
	if c.par != nil {
		c.par.stop()
	}
	if c.stream != nil {
		c.stream.close()
	}
	for _, r := range c.cur {
		r.Release()
	}
	c.cur = nil
	return c.f.Close()
}
