package connectors

import (
	"bytes"
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/operators/sources"
)

// jsonFormat: one JSON object per row. A message holds one object or several
// as JSON lines; published messages hold one row each, encoded as the JSON
// lines file sink writes them (timestamps RFC 3339, NULL as null).
func jsonFormat() format {
	return format{name: "json", doc: "one JSON object per message (or JSON lines), fields matched by name",
		decode: func(_ memory.Allocator, _ *arrow.Schema, data []byte, rb *sources.RowBuilder) ([]arrow.Record, []error) {
			var bad []error
			line := 0
			for len(data) > 0 {
				var text []byte
				if i := bytes.IndexByte(data, '\n'); i >= 0 {
					text, data = data[:i], data[i+1:]
				} else {
					text, data = data, nil
				}
				line++
				text = bytes.TrimSpace(text)
				if len(text) == 0 {
					continue
				}
				// Straight into the columns: no map per message.
				if err := rb.AppendJSON(text); err != nil {
					bad = append(bad, fmt.Errorf("line %d: %w", line, err))
				}
			}
			return nil, bad
		},
		encode: func(rec arrow.Record, max int, publish func([]byte) error) error {
			var buf bytes.Buffer
			w := sinks.NewJSONLines(&buf)
			if err := w.Write(rec); err != nil {
				return err
			}
			return publishLines(buf.Bytes(), max, publish)
		},
	}
}

// publishLines publishes each line (without its newline) as one message.
func publishLines(b []byte, max int, publish func([]byte) error) error {
	for row := 0; len(b) > 0; row++ {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			i = len(b)
		}
		line := b[:i]
		if i < len(b) {
			b = b[i+1:]
		} else {
			b = nil
		}
		// A row over the max payload goes whole: the output chunks it.
		// The publisher may keep the slice: give it its own copy.
		if err := publish(append([]byte(nil), line...)); err != nil {
			return err
		}
	}
	return nil
}
