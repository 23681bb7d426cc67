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

// JSONLines writes one JSON object per row (field order as in the schema),
// NULL as null. A writer for people and files (New) prints timestamps and
// intervals as DuckDB does ("2024-05-01 08:00:00.5", "01:30:00"); the NATS
// wire format (NewJSONLines) keeps RFC 3339 timestamps.
type JSONLines struct {
	w    *bufio.Writer
	text bool
	row  []byte
}

// NewJSONLines writes JSON lines to w, flushing after every batch so a
// streaming consumer sees windows as they close; timestamps are RFC 3339.
func NewJSONLines(w io.Writer) *JSONLines { return &JSONLines{w: bufio.NewWriter(w)} }

// NewJSONText writes JSON lines with timestamps and intervals as DuckDB
// prints them (`--format jsonl`, a FORMAT JSON file sink).
func NewJSONText(w io.Writer) *JSONLines { return &JSONLines{w: bufio.NewWriter(w), text: true} }

func (j *JSONLines) Write(rec arrow.Record) error {
	names := jsonNames(rec)
	for i := 0; i < int(rec.NumRows()); i++ {
		var err error
		if j.row, err = appendJSONRow(j.row[:0], rec, names, i, j.text); err != nil {
			return err
		}
		j.w.Write(j.row)
		j.w.WriteByte('\n')
	}
	return j.w.Flush()
}

// Close flushes.
func (j *JSONLines) Close() error { return j.w.Flush() }

// JSONArray writes the rows as one JSON array, as DuckDB's CLI does in
// .mode json: "[{...},\n{...}]", each row on a line of its own, "[]" for
// none; timestamps and intervals as DuckDB prints them. Rows stream out as
// they come; the array closes at Close.
type JSONArray struct {
	w   *bufio.Writer
	n   int64
	row []byte
}

// NewJSONArray writes one JSON array to w (`--format json`).
func NewJSONArray(w io.Writer) *JSONArray { return &JSONArray{w: bufio.NewWriter(w)} }

func (j *JSONArray) Write(rec arrow.Record) error {
	names := jsonNames(rec)
	for i := 0; i < int(rec.NumRows()); i++ {
		if j.n == 0 {
			j.w.WriteByte('[')
		} else {
			j.w.WriteString(",\n")
		}
		j.n++
		var err error
		if j.row, err = appendJSONRow(j.row[:0], rec, names, i, true); err != nil {
			return err
		}
		j.w.Write(j.row)
	}
	return j.w.Flush()
}

// Close ends the array.
func (j *JSONArray) Close() error {
	if j.n == 0 {
		j.w.WriteByte('[')
	}
	j.w.WriteString("]\n")
	return j.w.Flush()
}

func jsonNames(rec arrow.Record) [][]byte {
	names := make([][]byte, rec.NumCols())
	for i, f := range rec.Schema().Fields() {
		names[i], _ = json.Marshal(f.Name)
	}
	return names
}

// appendJSONRow appends row i of rec as a JSON object. text: timestamps and
// intervals as DuckDB's text (JSONValue), else RFC 3339 timestamps.
func appendJSONRow(dst []byte, rec arrow.Record, names [][]byte, i int, text bool) ([]byte, error) {
	dst = append(dst, '{')
	for c := range names {
		if c > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, names[c]...)
		dst = append(dst, ':')
		v := Value(rec.Column(c), i)
		if t, ok := v.(time.Time); ok && !text {
			v = t.UTC().Format(time.RFC3339Nano)
		} else {
			v = JSONValue(v)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return dst, fmt.Errorf("json: %w", err)
		}
		dst = append(dst, b...)
	}
	return append(dst, '}'), nil
}

// JSONValue is a value as DuckDB's JSON output has it: timestamps and
// intervals as their text (FormatValue), NaN and infinities as null,
// everything else as itself.
func JSONValue(v any) any {
	switch x := v.(type) {
	case time.Time, time.Duration:
		return FormatValue(x, "")
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
	}
	return v
}

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

// New returns the writer for a format name: table, csv, json or jsonl
// (JSON lines: what a FORMAT JSON sink writes, as DuckDB's COPY ... (FORMAT
// JSON) does), or parquet. The CLI's --format json is an array instead
// (NewJSONArray), as DuckDB's CLI prints it.
func New(format string, w io.Writer) (Writer, error) {
	switch format {
	case "", "table":
		return NewTable(w), nil
	case "csv":
		return NewCSV(w), nil
	case "json", "jsonl":
		return NewJSONText(w), nil
	case "parquet":
		return NewParquet(w), nil
	case "discard":
		return Discard{}, nil
	}
	return nil, fmt.Errorf("unknown output format %q: want table, csv, json, parquet or discard", format)
}
