package rel

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// TestSpillStopsBeforeTheDiskFills spills a join onto a disk of 1 GiB
// with 40 KiB above its reserve (a tenth free), the disk's free space
// falling as the spill files grow: the join fails with ErrDiskReserve,
// never having written past the reserve, and leaves no file behind. On a
// disk with room the same join spills and answers (TestSpillJoin...).
func TestSpillStopsBeforeTheDiskFills(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	const size, headroom = 1 << 30, 40 << 10
	var written int64 // the spill files' bytes at the latest look
	spilled := func() int64 {
		var n int64
		filepath.WalkDir(tmp, func(_ string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if info, err := d.Info(); err == nil {
					n += info.Size()
				}
			}
			return nil
		})
		return n
	}
	looks := 0
	defer func(f func(string) (uint64, uint64, error)) { statFS = f; diskGuard.allowed = 0 }(statFS)
	diskGuard.allowed = 0
	statFS = func(dir string) (uint64, uint64, error) {
		if !strings.HasPrefix(dir, tmp) {
			return 0, 0, fmt.Errorf("a look at %s, not the spill's directory", dir)
		}
		looks++
		written = spilled()
		return size, size/spillFreeShare + headroom - uint64(written), nil
	}
	rng := rand.New(rand.NewSource(7))
	var table [][]any
	for i := range 3000 {
		table = append(table, []any{int64(rng.Intn(1000)), fmt.Sprint("n", i)})
	}
	_, batches, epochs := streamRows(rng, 2000, 64, 50_000)
	id := &expr.Column{Index: 5, Name: "id", DataType: arrow.PrimitiveTypes.Int32}
	spec := joinOn(t, 5, colK, id)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	left, right := joinInputs(t, mem, batches, epochs, table)
	capt, err := runJoinGraph(t, mem, left, right, func(dataflow.Instance) (dataflow.Operator, error) {
		return NewSpillJoin(spec, streamSchema, tableSchema, functions.Builtins(), 1<<10, &SpillStats{}), nil
	})
	if capt != nil {
		capt.Release()
	}
	if !errors.Is(err, ErrDiskReserve) || !strings.Contains(err.Error(), "leave a tenth of it free") {
		t.Fatalf("the join on a nearly full disk: %v, want ErrDiskReserve", err)
	}
	if written > headroom {
		t.Errorf("%d bytes spilled at the last look, past the %d above the reserve", written, headroom)
	}
	if looks < 2 || looks > 20 {
		t.Errorf("%d looks at the disk for %d KiB of headroom: want a few per halving", looks, headroom>>10)
	}
	t.Logf("failed after %d looks, %d bytes spilled: %v", looks, written, err)
	if left, err := os.ReadDir(tmp); err != nil || len(left) != 0 {
		t.Errorf("temporary files left: %v %v", left, err)
	}
}

// TestDiskGuardedFileStops: a shared worker's file sink writes through
// DiskGuarded; on a disk 4 KiB above its reserve, falling as the file
// grows, the writes stop with ErrDiskReserve before the reserve.
func TestDiskGuardedFileStops(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "out.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const size, headroom = 1 << 30, 4 << 10
	defer func(fn func(string) (uint64, uint64, error)) { statFS = fn; diskGuard.allowed = 0 }(statFS)
	diskGuard.allowed = 0
	statFS = func(string) (uint64, uint64, error) {
		info, err := f.Stat()
		if err != nil {
			return 0, 0, err
		}
		return size, size/spillFreeShare + headroom - uint64(info.Size()), nil
	}
	w := DiskGuarded(f)
	line := []byte(strings.Repeat("x", 99) + "\n")
	var n int
	for n = 0; n < 1000; n++ {
		if _, err = w.Write(line); err != nil {
			break
		}
	}
	info, _ := f.Stat()
	if !errors.Is(err, ErrDiskReserve) || info.Size() > headroom || info.Size() < headroom/2 {
		t.Errorf("after %d lines (%d bytes): %v, want ErrDiskReserve within the %d bytes above the reserve", n, info.Size(), err, headroom)
	}
}
