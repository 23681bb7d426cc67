package exec

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

// A sink TO DISCARD (Flink's blackhole) takes every row and writes nothing:
// the query runs whole (its summary counts the rows) and no file or stdout
// output appears.
func TestDiscardSinkCountsRowsAndWritesNothing(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	var csv strings.Builder
	csv.WriteString("id,n\n")
	for i := 0; i < 1000; i++ {
		csv.WriteString("1,2\n")
	}
	os.WriteFile(filepath.Join(dir, "t.csv"), []byte(csv.String()), 0o644)
	var stdout, log bytes.Buffer
	src := "CREATE TABLE t (id BIGINT, n BIGINT) FROM FILE 't.csv' FORMAT CSV;\nCREATE SINK nowhere TO DISCARD;\nINSERT INTO nowhere SELECT id + n AS s FROM t WHERE n > 1;\n"
	err := RunScript(context.Background(), filepath.Join(dir, "q.sql"), src, ScriptOptions{
		Options: Options{Allocator: mem, Stdout: &stdout},
		Log:     &log,
	})
	if err != nil {
		t.Fatal(err)
	}
	if stdout.Len() != 0 {
		t.Fatalf("a discard sink wrote %q", stdout.String())
	}
	if !strings.Contains(log.String(), "1000 rows") {
		t.Fatalf("the summary does not count the 1000 rows the sink took: %q", log.String())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("a discard sink made files: %v", entries)
	}
}
