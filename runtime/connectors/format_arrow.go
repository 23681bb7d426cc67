package connectors

import (
	"bytes"
	"context"
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/relay/frame"
)

// arrowFormat: each message is a complete Arrow IPC stream (schema, one
// record batch, end of stream: the relay's data body), so any message can be
// read alone, by any Arrow reader. Columns are
// matched to the stream's schema by name and cast to its types. A record
// too large for the server's max payload is sent as several messages of
// fewer rows; a single row that still does not fit goes out in chunks
// (chunk.go).
func arrowFormat() format {
	return format{name: "arrow", doc: "one Arrow IPC stream per message (one record batch, split by rows to fit the max payload)",
		decode: decodeArrow,
		encode: encodeArrow,
	}
}

// decodeArrow reads a message with relay/frame's decoder, which checks every
// length against the bytes really there: a subject is open to anyone, and
// Arrow's own reader trusts the sizes a message declares (a forged one can
// make it allocate without bound).
func decodeArrow(mem memory.Allocator, schema *arrow.Schema, data []byte, _ *sources.RowBuilder) ([]arrow.Record, []error) {
	rec, err := frame.DecodeRecord(data, mem)
	if err != nil {
		return nil, []error{fmt.Errorf("%w: not an Arrow IPC stream of one record batch: %v", ErrBadMessage, err)}
	}
	if rec == nil {
		return nil, nil
	}
	defer rec.Release()
	cols, err := matchColumns(rec.Schema(), schema)
	if err != nil {
		return nil, []error{err}
	}
	out, err := project(mem, rec, cols, schema)
	if err != nil {
		return nil, []error{err}
	}
	return []arrow.Record{out}, nil
}

// project picks cols of rec as schema, casting columns whose type differs
// (a file published with inferred BIGINT into an INT stream).
func project(mem memory.Allocator, rec arrow.Record, cols []int, schema *arrow.Schema) (arrow.Record, error) {
	arrs := make([]arrow.Array, len(cols))
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, c := range cols {
		col, want := rec.Column(c), schema.Field(i).Type
		if arrow.TypeEqual(col.DataType(), want) {
			col.Retain()
			arrs[i] = col
			continue
		}
		cast, err := compute.CastArray(compute.WithAllocator(context.Background(), dataflow.Unrefused(mem)), col, compute.SafeCastOptions(want))
		if err != nil {
			return nil, fmt.Errorf("%w: column %q is %s, want %s: %v", ErrBadMessage, schema.Field(i).Name, col.DataType(), want, err)
		}
		arrs[i] = cast
	}
	return array.NewRecord(schema, arrs, rec.NumRows()), nil
}

// matchColumns finds each field of want in have by name.
func matchColumns(have, want *arrow.Schema) ([]int, error) {
	cols := make([]int, want.NumFields())
	for i, f := range want.Fields() {
		idx := have.FieldIndices(f.Name)
		if len(idx) == 0 {
			return nil, fmt.Errorf("%w: no column %q in the message's schema (%s)", ErrBadMessage, f.Name, have)
		}
		cols[i] = idx[0]
	}
	return cols, nil
}

func ipcBytes(rec arrow.Record) ([]byte, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func encodeArrow(rec arrow.Record, max int, publish func([]byte) error) error {
	b, err := ipcBytes(rec)
	if err != nil {
		return err
	}
	if max <= 0 || len(b) <= max {
		return publish(b)
	}
	n := rec.NumRows()
	if n <= 1 {
		// One row over the max payload: the output cuts it into chunks.
		return publish(b)
	}
	// Halves until each piece fits: a skewed record may need uneven pieces.
	for _, r := range [][2]int64{{0, n / 2}, {n / 2, n}} {
		part := rec.NewSlice(r[0], r[1])
		err := encodeArrow(part, max, publish)
		part.Release()
		if err != nil {
			return err
		}
	}
	return nil
}
