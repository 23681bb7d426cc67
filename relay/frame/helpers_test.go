package frame

import (
	"encoding/binary"
	"io"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/ipc"
)

func newTwoRecordStream(t testing.TB, w io.Writer, rec arrow.Record) *ipc.Writer {
	iw := ipc.NewWriter(w, ipc.WithSchema(rec.Schema()))
	for i := 0; i < 2; i++ {
		if err := iw.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := iw.Close(); err != nil {
		t.Fatal(err)
	}
	return iw
}

// schemaEnd is the offset just past the schema message of an IPC stream.
func schemaEnd(b []byte) int {
	return 8 + int(binary.LittleEndian.Uint32(b[4:]))
}
