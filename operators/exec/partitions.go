package exec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tierflow/tierflow/operators/sources"
)

// A file stream may be declared over a glob ('bid-*.csv'): each file it
// matches is a partition of the stream, as a Kafka topic's partitions are
// in Flink. A partition is read by a source instance of its own, with its
// own watermark (the largest event time of that file's rows so far), and
// operators downstream take the least of their inputs' watermarks. Which
// rows are late thus follows from each file's rows alone, whatever the
// number of workers the instances are spread over: the partitions are a
// property of the input, never of the cluster, so a query answers the same
// on one worker and on three. A stream of one file is one partition.

// ErrTooManyPartitions: a stream's glob matches more files than the worker
// can hold open for one query.
var ErrTooManyPartitions = errors.New("too many partitions")

// checkPartitions refuses a stream whose partitions would take more than
// half of the file descriptors the process has free. Every partition is
// read at once, each holding its file open from the build, so a glob over
// 20,000 files took all of a worker's descriptors (and 877 MiB of read
// buffers beside a 16 MiB query limit): every other query on the worker
// then failed to open a file or a connection. Half of what is free leaves
// the rest to everyone else, and any number of queries built after it
// still find some.
func checkPartitions(stream string, files []string) error {
	if len(files) < 2 {
		return nil
	}
	free, ok := descriptorsFree()
	if !ok || len(files) <= free/2 {
		return nil
	}
	return fmt.Errorf("%w: stream %s matches %d files, each a partition read at once with its file open; this process has %d file descriptors free and gives one query at most half: narrow the pattern", ErrTooManyPartitions, stream, len(files), free)
}

// isPattern reports whether p is a glob rather than a file name.
func isPattern(p string) bool { return strings.ContainsAny(p, "*?[") }

// PartitionFiles returns the files of a file stream in name order: path
// itself, or the files its glob matches when no file has that very name.
// A glob that matches nothing is an error naming it.
func PartitionFiles(path string) ([]string, error) {
	if !isPattern(path) {
		return []string{path}, nil
	}
	if _, err := os.Stat(path); err == nil {
		return []string{path}, nil
	}
	files, err := filepath.Glob(path)
	if err != nil {
		return nil, fmt.Errorf("%w: pattern %q: %v", sources.ErrBadFile, path, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: no file matches %q", sources.ErrBadFile, path)
	}
	sort.Strings(files)
	return files, nil
}

// globIn reports whether pattern p matches some file in dir.
func globIn(dir, p string) bool {
	m, err := filepath.Glob(filepath.Join(dir, p))
	return err == nil && len(m) > 0
}
