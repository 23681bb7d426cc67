package rel

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
)

// ErrDiskReserve: a query's spill (or, on a shared worker, its file sink)
// stopped before it filled the disk. Memory has a budget per query and a
// guard per process; the disk a query writes to is shared the same way (by
// the process, its other queries, a NATS server's store), so a write stops
// while a tenth of the file system is still free (the level at which disks
// are commonly called full), and the query fails with the reason instead
// of the machine failing everyone's.
var ErrDiskReserve = errors.New("stopped before the disk filled")

// spillFreeShare is the part of a file system a query's writes leave free.
const spillFreeShare = 10

// statFS reads a file system's size and free bytes (a variable so that a
// test can fill a disk without writing it).
var statFS = func(dir string) (size, free uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return st.Blocks * uint64(st.Bsize), st.Bavail * uint64(st.Bsize), nil
}

// diskGuard is the process's one view of the spill disk: what every spill
// may still write before it must look at the file system again. After a
// look it allows half the headroom above the reserve, so the writes of all
// spills together never pass the reserve between two looks, and the looks
// grow more frequent only as the disk nears it (a few per halving, not one
// per write).
var diskGuard struct {
	mu      sync.Mutex
	allowed int64
}

// spillCharge accounts n bytes about to be written under dir.
func spillCharge(dir string, n int) error {
	diskGuard.mu.Lock()
	defer diskGuard.mu.Unlock()
	if diskGuard.allowed >= int64(n) {
		diskGuard.allowed -= int64(n)
		return nil
	}
	size, free, err := statFS(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	reserve := size / spillFreeShare
	if free < reserve+uint64(n) {
		return fmt.Errorf("%w: %s has %s free of %s, and a query's spills and files leave a tenth of it free", ErrDiskReserve, dir, dataflow.Bytes(int64(free)), dataflow.Bytes(int64(size)))
	}
	diskGuard.allowed = int64(free-reserve)/2 - int64(n)
	return nil
}

// guardedFile is a file whose writes are charged to the disk guard.
type guardedFile struct {
	f   *os.File
	dir string
}

func (g guardedFile) Write(p []byte) (int, error) {
	if err := spillCharge(g.dir, len(p)); err != nil {
		return 0, err
	}
	return g.f.Write(p)
}

// DiskGuarded is f with its writes under the process's disk guard: what a
// shared worker's file sinks write, as its spills, stops while a tenth of
// the disk is free.
func DiskGuarded(f *os.File) io.Writer { return guardedFile{f: f, dir: filepath.Dir(f.Name())} }

// spillFile is a spill's Arrow IPC file, written through a buffer: the
// IPC writer writes each record's metadata and buffers apart, a system
// call each unbuffered (a fifth of a sort's spill went to them).
type spillFile struct {
	f  *os.File
	bw *bufio.Writer
	w  *ipc.Writer
}

// spillBuffer is each spill file's write buffer, and readSpill's: a
// partitioned spill writes 16 files at once.
const spillBuffer = 32 << 10

// createSpillFile creates path in dir for Arrow IPC records of schema,
// its writes under the disk guard.
func createSpillFile(dir, path string, schema *arrow.Schema, mem memory.Allocator) (*spillFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("spill: %w", err)
	}
	bw := bufio.NewWriterSize(guardedFile{f: f, dir: dir}, spillBuffer)
	return &spillFile{f: f, bw: bw, w: ipc.NewWriter(bw, ipc.WithSchema(schema), ipc.WithAllocator(mem))}, nil
}

// write appends rec to the file.
func (p *spillFile) write(rec arrow.Record) error {
	if err := p.w.Write(rec); err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	return nil
}

// finish ends the IPC stream and writes what is buffered: the file can
// be read (readSpill).
func (p *spillFile) finish() error {
	err := p.w.Close()
	if err == nil {
		err = p.bw.Flush()
	}
	if err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	return nil
}

// spillsOnce reports whether an operator that spills once, and from then
// on writes every row to its partition files (a join's table, window
// functions' rows), sends the held bytes of rows to disk: past its limit
// (0: none), or with its query's budget (used of budget bytes; 0: none)
// more than half full. The rows it holds were charged to the operators
// that made them, which the budget refuses past its limit (failing the
// query), not to it: it spills while the other half is left to the
// batches in flight and to the partition it reads back from disk
// (deploy.Limits.SpillBytes).
func spillsOnce(limit, held, used, budget int64) bool {
	return limit > 0 && held > limit || budget > 0 && used > budget/2
}

// writeSplit writes rec's rows to files, row i to files[dst[i]]: a
// partitioned spill's write (the join's, the aggregation's, the window
// functions').
func writeSplit(mem memory.Allocator, files []*spillFile, rec arrow.Record, dst []uint32) error {
	split, err := dataflow.Split(mem, rec, dst, len(files))
	if err != nil {
		return err
	}
	for i, r := range split {
		if r == nil {
			continue
		}
		if err == nil {
			err = files[i].write(r)
		}
		r.Release()
	}
	return err
}
