package sinks

import (
	"os"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// WriteIPCFile writes an Arrow IPC file (zstd-compressed unless opts name
// another codec, e.g. ipc.WithLZ4()) of schema at path: records calls emit
// with each record in turn, and emit writes it and releases it. The file is
// complete (footer written, closed) when it returns nil; on an error it is
// left as far as it got. The example generators write their stream files
// with it, so that the same records make the same bytes.
func WriteIPCFile(path string, schema *arrow.Schema, mem memory.Allocator, records func(emit func(arrow.Record) error) error, opts ...ipc.Option) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	w, err := ipc.NewFileWriter(out, append([]ipc.Option{ipc.WithSchema(schema), ipc.WithAllocator(mem), ipc.WithZstd()}, opts...)...)
	if err != nil {
		out.Close()
		return err
	}
	emit := func(rec arrow.Record) error {
		defer rec.Release()
		return w.Write(rec)
	}
	if err := records(emit); err != nil {
		w.Close()
		out.Close()
		return err
	}
	if err := w.Close(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
