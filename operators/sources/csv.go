package sources

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// CSVReader reads a CSV file with a header row. With a schema, columns are
// matched to the header by name (case-insensitive); without one, types are
// inferred from the first rows.
type CSVReader struct {
	path    string
	f       *os.File
	r       *csv.Reader
	schema  *arrow.Schema
	cols    []int // header position of each schema field
	batch   int
	errs    rowErrors
	pending [][]string // rows read ahead for inference
	lines   []int
}

// inferRows is how many rows type inference looks at.
const inferRows = 1000

// OpenCSV opens path. schema nil infers one; batch is the rows per record.
func OpenCSV(path string, schema *arrow.Schema, batch int, policy OnError, report *Report) (*CSVReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	c := &CSVReader{path: path, f: f, r: csv.NewReader(f), batch: batch, errs: rowErrors{policy, report}}
	c.r.FieldsPerRecord = -1
	c.r.ReuseRecord = false
	header, err := c.r.Read()
	if err != nil {
		f.Close()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: %s: empty file (want a header row)", ErrBadFile, path)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrBadFile, path, err)
	}
	for i := range header {
		header[i] = strings.TrimSpace(header[i])
	}
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
			}
		}
		if pos < 0 {
			f.Close()
			return nil, fmt.Errorf("%w: %s: no column %q in the header (have %s)", ErrBadFile, path, fld.Name, strings.Join(header, ", "))
		}
		c.cols = append(c.cols, pos)
	}
	return c, nil
}

func (c *CSVReader) infer(header []string) (*arrow.Schema, error) {
	for len(c.pending) < inferRows {
		rec, err := c.r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := c.r.FieldPos(0)
		if err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %v", ErrBadFile, c.path, line, err)
		}
		c.pending = append(c.pending, rec)
		c.lines = append(c.lines, line)
	}
	fields := make([]arrow.Field, len(header))
	for j, h := range header {
		var samples []any
		for _, r := range c.pending {
			if j < len(r) {
				samples = append(samples, r[j])
			}
		}
		fields[j] = arrow.Field{Name: h, Type: inferType(samples), Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}

// Schema is the rows' schema.
func (c *CSVReader) Schema() *arrow.Schema { return c.schema }

func (c *CSVReader) next() ([]string, int, error) {
	if len(c.pending) > 0 {
		r, l := c.pending[0], c.lines[0]
		c.pending, c.lines = c.pending[1:], c.lines[1:]
		return r, l, nil
	}
	r, err := c.r.Read()
	line, _ := c.r.FieldPos(0)
	return r, line, err
}

// Next reads up to one batch of rows.
func (c *CSVReader) Next(mem memory.Allocator) (arrow.Record, error) {
	b := newBatcher(mem, c.schema)
	row := make([]any, len(c.cols))
	for b.n < c.batch {
		rec, line, err := c.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				if err := c.errs.handle(fmt.Errorf("%w: %s:%d: %v", ErrBadRow, c.path, pe.Line, pe.Err)); err != nil {
					b.discard()
					return nil, err
				}
				continue
			}
			b.discard()
			return nil, fmt.Errorf("%w: %s: %v", ErrBadFile, c.path, err)
		}
		if bad := c.convertRow(rec, line, row); bad != nil {
			if err := c.errs.handle(bad); err != nil {
				b.discard()
				return nil, err
			}
			continue
		}
		b.add(row)
	}
	return b.finish(), nil
}

func (c *CSVReader) convertRow(rec []string, line int, row []any) error {
	for i, pos := range c.cols {
		if pos >= len(rec) {
			return fmt.Errorf("%w: %s:%d: %d fields, column %q is field %d", ErrBadRow, c.path, line, len(rec), c.schema.Field(i).Name, pos+1)
		}
		v, err := convert(rec[pos], c.schema.Field(i).Type)
		if err != nil {
			return fmt.Errorf("%w: %s:%d: column %q: %v", ErrBadRow, c.path, line, c.schema.Field(i).Name, err)
		}
		row[i] = v
	}
	return nil
}

// Close closes the file.
func (c *CSVReader) Close() error { return c.f.Close() }
