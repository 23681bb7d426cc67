package sources

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// JSONLReader reads one JSON object per line. Fields are matched to the schema
// by name; missing fields are NULL. Without a schema, the fields of the first
// rows (in first-seen order) and their types are inferred.
type JSONLReader struct {
	path    string
	f       *os.File
	sc      *bufio.Scanner
	schema  *arrow.Schema
	batch   int
	errs    rowErrors
	line    int
	pending []map[string]any
	plines  []int
	order   func([]byte) // records key order while inferring
	maxLine int          // the scanner's longest line
}

// OpenJSONL opens path; schema nil infers one.
func OpenJSONL(path string, schema *arrow.Schema, batch int, policy OnError, report *Report) (*JSONLReader, error) {
	return OpenJSONLLimited(path, schema, batch, policy, report, 0)
}

// jsonlMaxLine is the longest line a JSON lines file may have unbounded
// by a query's memory: bufio.Scanner holds a line whole.
const jsonlMaxLine = 64 << 20

// OpenJSONLLimited is OpenJSONL with a bound on a line's bytes below
// jsonlMaxLine (0: that one), as OpenCSVLimited: a query's reader takes its
// memory limit.
func OpenJSONLLimited(path string, schema *arrow.Schema, batch int, policy OnError, report *Report, maxLine int) (*JSONLReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadFile, err)
	}
	j := &JSONLReader{path: path, f: f, sc: bufio.NewScanner(f), batch: batch, errs: rowErrors{policy, report}, maxLine: jsonlMaxLine}
	if maxLine > 0 {
		j.maxLine = min(maxLine, jsonlMaxLine)
	}
	first := 1 << 16
	if left, ok := bytesLeft(f, 0); ok {
		first = int(min(int64(first), left+1))
	}
	j.sc.Buffer(make([]byte, max(16, min(first, j.maxLine))), j.maxLine)
	if schema == nil {
		if schema, err = j.infer(); err != nil {
			f.Close()
			return nil, err
		}
	}
	j.schema = schema
	return j, nil
}

func (j *JSONLReader) decode() (map[string]any, int, bool, error) {
	for j.sc.Scan() {
		j.line++
		text := bytes.TrimSpace(j.sc.Bytes())
		if len(text) == 0 {
			continue
		}
		// encoding/json turns invalid UTF-8 into U+FFFD silently; the row
		// is refused instead, as DuckDB does.
		if !utf8.Valid(text) {
			return nil, j.line, true, fmt.Errorf("%w: %s:%d: %w", ErrBadRow, j.path, j.line, ErrInvalidUTF8)
		}
		d := json.NewDecoder(bytes.NewReader(text))
		d.UseNumber()
		var obj map[string]any
		if err := d.Decode(&obj); err != nil {
			return nil, j.line, true, fmt.Errorf("%w: %s:%d: not a JSON object: %v", ErrBadRow, j.path, j.line, err)
		}
		if j.order != nil {
			j.order(text)
		}
		return obj, j.line, true, nil
	}
	if err := j.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) && j.maxLine < jsonlMaxLine {
			return nil, j.line, false, fmt.Errorf("%s:%d: %w", j.path, j.line+1, lineTooLong(j.line+1, j.maxLine))
		}
		return nil, j.line, false, fmt.Errorf("%w: %s:%d: %v", ErrBadFile, j.path, j.line+1, err)
	}
	return nil, j.line, false, nil
}

func (j *JSONLReader) infer() (*arrow.Schema, error) {
	var names []string
	seen := map[string]bool{}
	// Columns in the order keys first appear in the text (a decoded map has
	// lost it).
	j.order = func(text []byte) {
		for _, k := range topLevelKeys(text) {
			if !seen[k] {
				seen[k] = true
				names = append(names, k)
			}
		}
	}
	defer func() { j.order = nil }()
	for len(j.pending) < inferRows {
		obj, line, ok, err := j.decode()
		if !ok && err == nil {
			break
		}
		if err != nil {
			if !ok {
				return nil, err
			}
			if err := j.errs.handle(err); err != nil {
				return nil, err
			}
			continue
		}
		j.pending = append(j.pending, obj)
		j.plines = append(j.plines, line)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: %s: no JSON objects to infer a schema from", ErrBadFile, j.path)
	}
	fields := make([]arrow.Field, len(names))
	for i, n := range names {
		var samples []any
		for _, o := range j.pending {
			samples = append(samples, o[n])
		}
		fields[i] = arrow.Field{Name: n, Type: inferType(samples), Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}

// topLevelKeys lists an object's keys in textual order.
func topLevelKeys(text []byte) []string {
	d := json.NewDecoder(bytes.NewReader(text))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return keys
		}
		k, _ := t.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return keys
		}
	}
	return keys
}

// Schema is the rows' schema.
func (j *JSONLReader) Schema() *arrow.Schema { return j.schema }

// Next reads up to one batch of rows.
func (j *JSONLReader) Next(mem memory.Allocator) (arrow.Record, error) {
	b := newBatcher(mem, j.schema)
	row := make([]any, j.schema.NumFields())
	for b.n < j.batch {
		var obj map[string]any
		var line int
		if len(j.pending) > 0 {
			obj, line = j.pending[0], j.plines[0]
			j.pending, j.plines = j.pending[1:], j.plines[1:]
		} else {
			o, l, ok, err := j.decode()
			if !ok && err == nil {
				break
			}
			if err != nil {
				if !ok {
					b.discard()
					return nil, err
				}
				if err := j.errs.handle(err); err != nil {
					b.discard()
					return nil, err
				}
				continue
			}
			obj, line = o, l
		}
		bad := error(nil)
		for i, f := range j.schema.Fields() {
			v, err := convert(obj[f.Name], f.Type)
			if err != nil {
				bad = fmt.Errorf("%w: %s:%d: field %q: %v", ErrBadRow, j.path, line, f.Name, err)
				break
			}
			row[i] = v
		}
		if bad != nil {
			if err := j.errs.handle(bad); err != nil {
				b.discard()
				return nil, err
			}
			continue
		}
		b.add(row)
	}
	return b.finish(), nil
}

// Close closes the file.
func (j *JSONLReader) Close() error { return j.f.Close() }
