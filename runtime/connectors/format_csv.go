package connectors

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/operators/sources"
)

// csvFormat: CSV rows without a header, fields in the schema's column order
// (a subject has no header line, and a header per message would double the
// bytes of small rows). A message holds one row or several lines; published
// messages hold one row each.
func csvFormat() format {
	return format{name: "csv", doc: "CSV rows without header, fields in column order",
		decode: func(_ memory.Allocator, _ *arrow.Schema, data []byte, rb *sources.RowBuilder) ([]arrow.Record, []error) {
			r := sources.NewCSVScanner(bytes.NewReader(data))
			var bad []error
			for {
				fields, line, err := r.Read()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					var se *sources.CSVSyntaxError
					if !errors.As(err, &se) {
						bad = append(bad, fmt.Errorf("line %d: %w: %v", line, sources.ErrBadRow, err))
						break
					}
					bad = append(bad, fmt.Errorf("line %d: %w: %v", se.Line, sources.ErrBadRow, err))
					continue
				}
				if err := rb.AppendCSV(fields); err != nil {
					bad = append(bad, fmt.Errorf("line %d: %w", line, err))
				}
			}
			return nil, bad
		},
		encode: func(rec arrow.Record, max int, publish func([]byte) error) error {
			var line []byte
			row := make([]any, rec.NumCols())
			for i := 0; i < int(rec.NumRows()); i++ {
				for j := range row {
					row[j] = functions.ValueAt(rec.Column(j), i)
				}
				line = sinks.AppendCSVRow(line[:0], row)
				// A row over the max payload goes whole: the output chunks it.
				msg := bytes.TrimSuffix(line, []byte("\n"))
				if err := publish(append([]byte(nil), msg...)); err != nil {
					return err
				}
			}
			return nil
		},
	}
}
