package connectors

import (
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/sources"
)

// format is a message encoding: how a message becomes rows and a record
// becomes messages.
type format struct {
	name, doc string
	// decode appends a message's rows to rb (text formats) or returns them
	// as records (Arrow); bad lists what did not decode (a row, or the whole
	// message), each wrapping ErrBadMessage or sources.ErrBadRow.
	decode func(mem memory.Allocator, schema *arrow.Schema, data []byte, rb *sources.RowBuilder) (recs []arrow.Record, bad []error)
	// encode turns rec into messages of at most max bytes, handing each to
	// publish in order.
	encode func(rec arrow.Record, max int, publish func([]byte) error) error
}

func formats() []format { return []format{jsonFormat(), csvFormat(), arrowFormat()} }
