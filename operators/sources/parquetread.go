package sources

import (
	"os"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/file"
)

// readBufferSize is the buffer a Parquet column chunk is read through: it
// holds page headers and small pages; a page larger than it is read from
// the file straight into the page's own buffer. 64 KiB keeps a few syscalls
// per column chunk while every chunk's buffer stays small next to a page.
const readBufferSize = 64 << 10

// parquetReadProps are the reader properties of every Parquet file this
// package opens. arrow/go's default (unbuffered) reads a whole column chunk
// into one allocation and then copies it into a second of the same size
// before decoding its first page: two zeroed chunk-sized buffers and a copy
// per column and row group. Buffered, a chunk's pages are read as they are
// decoded, through one small buffer.
//
// Each page is decompressed into a buffer of the size its header states,
// allocated from mem: a scan's mem is its query's budget, so a page that
// would not fit is refused before it is allocated. A file is written by
// whoever wrote it: a 342 KB file of pages stating 800 MB each (zeros,
// compressed) took a worker to 6 GB over a 64 MiB limit while the pages
// came from Go's allocator.
func parquetReadProps(mem memory.Allocator) *parquet.ReaderProperties {
	p := parquet.NewReaderProperties(mem)
	p.BufferedStreamEnabled = true
	p.BufferSize = readBufferSize
	return p
}

// newParquetReader opens f's Parquet metadata with parquetReadProps(mem):
// the footer parsed when the file was last opened unchanged (footers), else
// parsed now.
func newParquetReader(f *os.File, mem memory.Allocator) (*file.Reader, error) {
	k, ok := footerKeyOf(f)
	if ok {
		if md := footers.get(k); md != nil {
			return file.NewParquetReader(f, file.WithReadProps(parquetReadProps(mem)), file.WithMetadata(md))
		}
	}
	pf, err := file.NewParquetReader(f, file.WithReadProps(parquetReadProps(mem)))
	if err == nil && ok {
		footers.put(k, pf.MetaData())
	}
	return pf, err
}
