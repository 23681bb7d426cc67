package sinks

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// CSV writes a header and then rows under the rule the CSV sources read
// (PostgreSQL COPY's): NULL is an empty field, an empty string is "".
type CSV struct {
	w      *bufio.Writer
	header bool
	line   []byte
	vals   []any
}

// NewCSV writes CSV to w.
func NewCSV(w io.Writer) *CSV { return &CSV{w: bufio.NewWriter(w)} }

func (c *CSV) Write(rec arrow.Record) error {
	if !c.header {
		c.vals = c.vals[:0]
		for _, f := range rec.Schema().Fields() {
			c.vals = append(c.vals, f.Name)
		}
		c.line = AppendCSVRow(c.line[:0], c.vals)
		if _, err := c.w.Write(c.line); err != nil {
			return err
		}
		c.header = true
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		c.vals = c.vals[:0]
		for j := 0; j < int(rec.NumCols()); j++ {
			c.vals = append(c.vals, Value(rec.Column(j), i))
		}
		c.line = AppendCSVRow(c.line[:0], c.vals)
		if _, err := c.w.Write(c.line); err != nil {
			return err
		}
	}
	return c.w.Flush()
}

// Close flushes.
func (c *CSV) Close() error { return c.w.Flush() }

// AppendCSVRow appends one CSV line (ending in a newline) of vals: NULL as an
// empty field, an empty string as "", fields with a comma, quote, line break
// or edge space quoted (quotes doubled).
func AppendCSVRow(dst []byte, vals []any) []byte {
	for i, v := range vals {
		if i > 0 {
			dst = append(dst, ',')
		}
		if v == nil {
			continue
		}
		s := FormatValue(v, "")
		if s == "" || strings.ContainsAny(s, ",\"\r\n") || s[0] == ' ' || s[len(s)-1] == ' ' {
			dst = append(dst, '"')
			dst = append(dst, strings.ReplaceAll(s, `"`, `""`)...)
			dst = append(dst, '"')
			continue
		}
		dst = append(dst, s...)
	}
	return append(dst, '\n')
}

// JSONLines writes one JSON object per row (field order as in the schema);
// timestamps as RFC 3339 strings, NULL as null.
type JSONLines struct {
	w *bufio.Writer
}

// NewJSONLines writes JSON lines to w, flushing after every batch so a
// streaming consumer sees windows as they close.
func NewJSONLines(w io.Writer) *JSONLines { return &JSONLines{w: bufio.NewWriter(w)} }

func (j *JSONLines) Write(rec arrow.Record) error {
	names := make([][]byte, rec.NumCols())
	for i, f := range rec.Schema().Fields() {
		names[i], _ = json.Marshal(f.Name)
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		j.w.WriteByte('{')
		for c := range names {
			if c > 0 {
				j.w.WriteByte(',')
			}
			j.w.Write(names[c])
			j.w.WriteByte(':')
			v := Value(rec.Column(c), i)
			switch x := v.(type) {
			case time.Time:
				v = x.UTC().Format(time.RFC3339Nano)
			case time.Duration:
				v = x.String()
			case float64:
				if math.IsNaN(x) || math.IsInf(x, 0) {
					v = nil
				}
			}
			b, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("json: %w", err)
			}
			j.w.Write(b)
		}
		j.w.WriteString("}\n")
	}
	return j.w.Flush()
}

// Close flushes.
func (j *JSONLines) Close() error { return j.w.Flush() }

// Parquet writes a Parquet file; the schema is taken from the first batch.
type Parquet struct {
	out io.Writer
	w   *pqarrow.FileWriter
}

// NewParquet writes Parquet to out.
func NewParquet(out io.Writer) *Parquet { return &Parquet{out: out} }

func (p *Parquet) Write(rec arrow.Record) error {
	if p.w == nil {
		w, err := pqarrow.NewFileWriter(rec.Schema(), p.out, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
		if err != nil {
			return err
		}
		p.w = w
	}
	return p.w.WriteBuffered(rec)
}

// Close writes the footer (an empty result still gets none: no schema is known).
func (p *Parquet) Close() error {
	if p.w == nil {
		return nil
	}
	return p.w.Close()
}

// New returns the writer for a format name: table, csv, json (JSON lines) or
// parquet.
func New(format string, w io.Writer) (Writer, error) {
	switch format {
	case "", "table":
		return NewTable(w), nil
	case "csv":
		return NewCSV(w), nil
	case "json", "jsonl":
		return NewJSONLines(w), nil
	case "parquet":
		return NewParquet(w), nil
	case "discard":
		return Discard{}, nil
	}
	return nil, fmt.Errorf("unknown output format %q: want table, csv, json, parquet or discard", format)
}
