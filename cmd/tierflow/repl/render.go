package repl

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/operators/sinks"
)

// Formats lists the result formats \format and --format accept.
func Formats() []string { return []string{"table", "json", "jsonl", "csv"} }

// maxCellWidth bounds a table column: long values (tensors, text) are cut
// with an ellipsis so a row stays on one line.
const maxCellWidth = 40

// column is a result column as renderers see it.
type column struct {
	name  string
	right bool // numbers align right
	// min is the narrowest the column starts: a stream's first window may
	// hold "1" and the next "10", and a column that widens mid-stream
	// breaks the alignment of everything above it.
	min int
}

// cell is one value: its text for table and csv, its JSON value for json.
type cell struct {
	text  string
	value any
	null  bool
}

// renderer writes a result as it streams: the columns, then batches of rows
// as they arrive, then the end with the row count.
type renderer interface {
	begin(cols []column) error
	rows(rows [][]cell) error
	end(n int64) error
}

func newRenderer(format string, w io.Writer, color bool) (renderer, error) {
	switch format {
	case "", "table":
		return &tableRenderer{w: w, color: color}, nil
	case "json":
		return &jsonRenderer{w: w}, nil
	case "jsonl":
		return &jsonRenderer{w: w, lines: true}, nil
	case "csv":
		return &csvRenderer{w: csv.NewWriter(w)}, nil
	}
	return nil, badf("unknown format %q (want %s)", format, strings.Join(Formats(), ", "))
}

// tableRenderer draws the one text table `tierflow run` draws too
// (sinks.TextTable), with long values cut at maxCellWidth so a row stays on
// one line, and the header in bold on a terminal.
type tableRenderer struct {
	w     io.Writer
	color bool
	t     *sinks.TextTable
}

func (t *tableRenderer) begin(cols []column) error {
	t.t = &sinks.TextTable{W: t.w, MaxWidth: maxCellWidth, Bold: t.color}
	for _, c := range cols {
		t.t.Names = append(t.t.Names, c.name)
		t.t.Right = append(t.t.Right, c.right)
		t.t.Min = append(t.t.Min, c.min)
	}
	return nil
}

func (t *tableRenderer) rows(rows [][]cell) error {
	text := make([][]string, len(rows))
	for i, r := range rows {
		text[i] = make([]string, len(r))
		for j, c := range r {
			text[i][j] = display(c)
		}
	}
	return t.t.Rows(text)
}

func (t *tableRenderer) end(n int64) error { return t.t.End(n) }

// display is a cell as the table shows it: NULL spelled out, line breaks
// visible so a row stays one line.
func display(c cell) string {
	if c.null {
		return "NULL"
	}
	if strings.ContainsAny(c.text, "\n\r\t") {
		return strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(c.text)
	}
	return c.text
}

// jsonRenderer writes one JSON array as DuckDB's CLI does in .mode json
// ("[{...},\n{...}]") or JSON lines. In an array each row's line ends
// once the next row (its comma) or the end (the closing bracket) is
// known, so the last row shown is held back until then: a line left open
// would be erased by the status line drawn under it on a terminal (which
// dropped the opening bracket and the last row).
type jsonRenderer struct {
	w       io.Writer
	lines   bool
	cols    []column
	n       int64
	pending []byte // the array's last row, not yet written
}

func (j *jsonRenderer) begin(cols []column) error {
	j.cols = cols
	return nil
}

func (j *jsonRenderer) rows(rows [][]cell) error {
	var b strings.Builder
	for _, r := range rows {
		row := j.object(r)
		if j.lines {
			b.Write(row)
			b.WriteByte('\n')
			continue
		}
		if j.pending != nil {
			if j.n == 1 {
				b.WriteByte('[')
			}
			b.Write(j.pending)
			b.WriteString(",\n")
		}
		j.n++
		j.pending = row
	}
	_, err := io.WriteString(j.w, b.String())
	return err
}

// object is one row as a JSON object.
func (j *jsonRenderer) object(r []cell) []byte {
	var b []byte
	b = append(b, '{')
	for i, c := range r {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(j.cols[i].name)
		b = append(b, k...)
		b = append(b, ':')
		v := []byte("null")
		if !c.null {
			var err error
			if v, err = json.Marshal(c.value); err != nil {
				v, _ = json.Marshal(c.text)
			}
		}
		b = append(b, v...)
	}
	return append(b, '}')
}

func (j *jsonRenderer) end(int64) error {
	if j.lines {
		return nil
	}
	end := "[]\n"
	if j.pending != nil {
		end = string(j.pending) + "]\n"
		if j.n == 1 {
			end = "[" + end
		}
	}
	_, err := io.WriteString(j.w, end)
	return err
}

// csvRenderer writes RFC 4180 CSV with a header; NULL is an empty field.
type csvRenderer struct{ w *csv.Writer }

func (c *csvRenderer) begin(cols []column) error {
	rec := make([]string, len(cols))
	for i, col := range cols {
		rec[i] = col.name
	}
	return c.w.Write(rec)
}

func (c *csvRenderer) rows(rows [][]cell) error {
	for _, r := range rows {
		rec := make([]string, len(r))
		for i, x := range r {
			if !x.null {
				rec[i] = x.text
			}
		}
		if err := c.w.Write(rec); err != nil {
			return err
		}
	}
	c.w.Flush()
	return c.w.Error()
}

func (c *csvRenderer) end(int64) error {
	c.w.Flush()
	return c.w.Error()
}

// schemaColumns maps an arrow schema to renderer columns.
func schemaColumns(s *arrow.Schema) []column {
	cols := make([]column, s.NumFields())
	for i, f := range s.Fields() {
		cols[i] = column{name: f.Name, right: numeric(f.Type)}
	}
	return cols
}

func numeric(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64, arrow.DECIMAL128, arrow.DECIMAL256:
		return true
	}
	return false
}

// recordCells converts a record batch to rows of cells.
func recordCells(rec arrow.Record) [][]cell {
	n := int(rec.NumRows())
	rows := make([][]cell, n)
	for i := range rows {
		rows[i] = make([]cell, rec.NumCols())
	}
	for c, arr := range rec.Columns() {
		id := arr.DataType().ID()
		temporal := id == arrow.TIMESTAMP || id == arrow.DURATION
		for r := 0; r < n; r++ {
			if arr.IsNull(r) {
				rows[r][c] = cell{null: true}
				continue
			}
			if temporal {
				// As DuckDB prints them, in every format (arrow's own
				// text is "3600000000us", "2024-05-01 08:00:00Z").
				t := sinks.FormatValue(functions.ValueAt(arr, r), "")
				rows[r][c] = cell{text: t, value: t}
				continue
			}
			// The text as run prints it (sinks.Value: a DECIMAL's digits,
			// a DATE's day, an interval's words).
			rows[r][c] = cell{text: sinks.FormatValue(sinks.Value(arr, r), ""), value: arr.GetOneForMarshal(r)}
		}
	}
	return rows
}

// textRows converts rows of strings (the session's own listings) to cells.
func textRows(rows [][]string) [][]cell {
	out := make([][]cell, len(rows))
	for i, r := range rows {
		out[i] = make([]cell, len(r))
		for j, s := range r {
			out[i][j] = cell{text: s, value: s}
		}
	}
	return out
}
