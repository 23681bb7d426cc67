package connectors

import (
	"bytes"
	"encoding/csv"
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
			r := csv.NewReader(bytes.NewReader(data))
			r.FieldsPerRecord = -1
			var bad []error
			for line := 1; ; line++ {
				fields, err := r.Read()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					bad = append(bad, fmt.Errorf("line %d: %w: %v", line, sources.ErrBadRow, err))
					var pe *csv.ParseError
					if !errors.As(err, &pe) {
						break
					}
					continue
				}
				if err := rb.AppendText(fields); err != nil {
					bad = append(bad, fmt.Errorf("line %d: %w", line, err))
				}
			}
			return nil, bad
		},
		encode: func(rec arrow.Record, max int, publish func([]byte) error) error {
			var buf bytes.Buffer
			w := csv.NewWriter(&buf)
			row := make([]string, rec.NumCols())
			for i := 0; i < int(rec.NumRows()); i++ {
				for j := range row {
					row[j] = sinks.FormatValue(functions.ValueAt(rec.Column(j), i), "")
				}
				buf.Reset()
				if err := w.Write(row); err != nil {
					return err
				}
				w.Flush()
				if err := w.Error(); err != nil {
					return err
				}
				msg := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
				if err := publish(append([]byte(nil), msg...)); err != nil {
					return err
				}
			}
			return nil
		},
	}
}
