package coordinator

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/parquet/file"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// inputRows counts the rows a query will read, so that a best-effort query
// can report its progress and an ETA: the rows of every file its scans
// read (Arrow IPC, Parquet, CSV). 0 when a scan reads a stream that does
// not end (NATS, JetStream) or a file that cannot be counted.
func inputRows(plan *logical.Plan, baseDir string) int64 {
	var total int64
	ok := true
	logical.Walk(plan.Root, func(n logical.Node) bool {
		s, isScan := n.(*logical.Scan)
		if !isScan || !ok {
			return ok
		}
		var path, format, declaredIn string
		switch {
		case s.Table != nil:
			path, format, declaredIn = s.Table.Path, s.Table.Format, s.Table.Pos.File
		case s.Stream != nil && strings.EqualFold(s.Stream.Source, "file"):
			path, format, declaredIn = s.Stream.Subject, s.Stream.Format, s.Stream.Pos.File
		default:
			ok = false
			return false
		}
		// A glob stream's rows are those of all its partitions.
		files, err := exec.PartitionFiles(exec.ResolvePath(path, baseDir, declaredIn))
		if err != nil {
			ok = false
			return false
		}
		for _, f := range files {
			n2, err := countRows(f, format)
			if err != nil {
				ok = false
				return false
			}
			total += n2
		}
		return true
	})
	if !ok {
		return 0
	}
	return total
}

// countRows counts a data file's rows from its metadata where it has them
// (Parquet), its record batches (Arrow IPC) or its lines (CSV, less the
// header).
func countRows(path, format string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	switch strings.ToLower(format) {
	case "parquet":
		r, err := file.NewParquetReader(f)
		if err != nil {
			return 0, err
		}
		defer r.Close()
		return r.NumRows(), nil
	case "csv":
		var n int64
		br := bufio.NewReaderSize(f, 1<<16)
		buf := make([]byte, 1<<16)
		for {
			k, err := br.Read(buf)
			n += int64(bytes.Count(buf[:k], []byte{'\n'}))
			if err == io.EOF {
				return max(n-1, 0), nil
			}
			if err != nil {
				return 0, err
			}
		}
	default: // arrow
		r, err := ipc.NewFileReader(f)
		if err != nil {
			return 0, err
		}
		defer r.Close()
		var n int64
		for i := range r.NumRecords() {
			rec, err := r.RecordAt(i)
			if err != nil {
				return 0, err
			}
			n += rec.NumRows()
			rec.Release()
		}
		return n, nil
	}
}

// progress fills a best-effort query's progress and ETA from the rows its
// sources have read of the rows it will read.
func progress(info *deploy.QueryInfo, now time.Time) {
	if info.InputRows <= 0 || info.Started.IsZero() {
		return
	}
	var read int64
	for _, op := range info.Operators {
		if strings.HasPrefix(op.Operator, "scan ") {
			read += op.RowsOut
		}
	}
	info.Progress = min(float64(read)/float64(info.InputRows), 1)
	info.ETASeconds = 0
	if el := now.Sub(info.Started).Seconds(); read > 0 && el > 0 && info.Ended.IsZero() {
		info.ETASeconds = float64(info.InputRows-min(read, info.InputRows)) / (float64(read) / el)
	}
}
