package sources

import (
	"os"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/parquet/metadata"
)

// footers keeps the parsed footers (file metadata) of the Parquet files
// this process opened, by path, size and modification time: a query opens
// each file several times (its statistics for the planner, the scan's
// plan, each parallel reader), and a later query the same files again,
// and a footer's Thrift decoding allocates per column chunk and row group
// (a few percent of a TPC-H query's CPU at SF 1, more over small tables).
// A parsed footer is read-only (its writer version is computed when it is
// parsed), so readers share it. An encrypted file's footer is not kept
// (its decryptor is set up per open). The cache is bounded by the
// footers' serialized size.
var footers = footerCache{max: 64 << 20}

type footerKey struct {
	path string
	size int64
	mod  time.Time
}

type footerCache struct {
	mu    sync.Mutex
	max   int // bytes of serialized footers kept, at most
	bytes int
	m     map[footerKey]*metadata.FileMetaData
	order []footerKey // oldest first
}

// keyOf is f's cache key; false when f cannot be stat'ed.
func footerKeyOf(f *os.File) (footerKey, bool) {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return footerKey{}, false
	}
	return footerKey{f.Name(), fi.Size(), fi.ModTime()}, true
}

func (c *footerCache) get(k footerKey) *metadata.FileMetaData {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

// put keeps md under k, dropping the oldest footers past the bound.
func (c *footerCache) put(k footerKey, md *metadata.FileMetaData) {
	if md == nil || md.FileDecryptor != nil || md.Size() > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[footerKey]*metadata.FileMetaData{}
	}
	if _, ok := c.m[k]; ok {
		return
	}
	c.m[k] = md
	c.order = append(c.order, k)
	c.bytes += md.Size()
	for c.bytes > c.max && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= c.m[old].Size()
		delete(c.m, old)
	}
}
