package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tierflow/tierflow/operators/sinks"
)

// withDescriptors runs fn with the process's open-file limit set to what is
// open now plus free, restoring it after.
func withDescriptors(t *testing.T, free int, fn func()) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("no open-file limit to lower: %v", err)
	}
	now, ok := descriptorsFree()
	if !ok {
		t.Skip("no /proc/self/fd")
	}
	open := int(lim.Cur) - now
	low := lim
	low.Cur = uint64(open + free)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skipf("cannot lower the open-file limit: %v", err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	fn()
}

// A stream whose glob matches more files than half the descriptors the
// process has free is refused before a file is opened, naming the count
// (a glob over 20,000 files took all of a worker's descriptors, failing
// every other query's opens); one within it is read, a partition a file.
func TestGlobPastHalfTheFreeDescriptorsIsRefused(t *testing.T) {
	dir := t.TempDir()
	for i := range 60 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("p-%03d.csv", i)), []byte(fmt.Sprintf("id,ts\n%d,2026-01-01 00:00:00\n", i)), 0o644)
	}
	run := func(glob string) (string, error) {
		out := &collect{}
		err := RunScript(context.Background(), filepath.Join(dir, "q.sql"),
			"CREATE STREAM s (id BIGINT, ts TIMESTAMP) FROM FILE '"+glob+"' FORMAT CSV;\nSELECT count(*) AS n FROM s;",
			ScriptOptions{Options: Options{BaseDir: dir}, NewOutput: func() (sinks.Writer, error) { return out, nil }})
		return fmt.Sprint(out.rows), err
	}
	withDescriptors(t, 100, func() {
		_, err := run("p-*.csv")
		if !errors.Is(err, ErrTooManyPartitions) || !strings.Contains(err.Error(), "matches 60 files") || !strings.Contains(err.Error(), "q.sql:2:27") {
			t.Errorf("60 files with 100 descriptors free: %v, want refused for its partitions at the stream", err)
		}
		got, err := run("p-0[0-3]*.csv")
		if err != nil || got != "[[40]]" {
			t.Errorf("40 files with 100 descriptors free: %s %v, want all 40 rows", got, err)
		}
	})
}
