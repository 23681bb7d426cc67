package exec

import (
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
