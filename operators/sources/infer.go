package sources

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// FormatOf is the file format a source reads: the declared one, else the
// one its extension names (CSV when it names none).
func FormatOf(format, path string) string {
	if format != "" {
		return strings.ToLower(format)
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		return "csv"
	case ".json", ".jsonl", ".ndjson":
		return "json"
	case ".parquet":
		return "parquet"
	case ".arrow", ".ipc", ".feather":
		return "arrow"
	}
	return "csv"
}

// InferSchema reads the schema of a file declared without columns, as
// DuckDB's read_csv does: CSV names from the header and JSON lines from the
// keys (in first-seen order), types from the first rows (BIGINT, DOUBLE,
// BOOLEAN, TIMESTAMP, else VARCHAR; every column nullable); Parquet and Arrow
// files carry their own schema.
func InferSchema(path, format string) (*arrow.Schema, error) {
	var r Reader
	var err error
	switch FormatOf(format, path) {
	case "csv":
		r, err = OpenCSV(path, nil, 1, Fail, nil)
	case "json":
		r, err = OpenJSONL(path, nil, 1, Fail, nil)
	case "parquet":
		r, err = OpenParquet(path, nil, 1, memory.DefaultAllocator, Fail, nil)
	case "arrow":
		r, err = OpenIPC(path, nil, memory.DefaultAllocator, Fail, nil)
	default:
		return nil, fmt.Errorf("%w: %s: unknown file format %q", ErrBadFile, path, format)
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Schema(), nil
}

// headerNames makes a CSV header into column names as DuckDB does: trimmed,
// an empty name becomes column<i> (from 0), a repeated one gets _<n>.
func headerNames(header []string) []string {
	out := make([]string, len(header))
	used := map[string]bool{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		if h == "" {
			h = fmt.Sprintf("column%d", i)
		}
		name := h
		for n := 1; used[strings.ToLower(name)]; n++ {
			name = fmt.Sprintf("%s_%d", h, n)
		}
		used[strings.ToLower(name)] = true
		out[i] = name
	}
	return out
}
