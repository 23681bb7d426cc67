package benchtest

import (
	"os"
	"path/filepath"
	"testing"
)

// FakeSQLPeer writes a stand-in for the DuckDB peer (bench.FindSQLPeer)
// that records its arguments in the file it returns, prints a table line
// and exits with code, and points TIERFLOW_SQLPEER at it.
func FakeSQLPeer(t *testing.T, code int) string {
	t.Helper()
	dir := t.TempDir()
	args := filepath.Join(dir, "args")
	bin := filepath.Join(dir, "peer")
	script := "#!/bin/sh\necho \"$@\" > " + args + "\necho '| query | ratio |'\nexit " + string(rune('0'+code)) + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TIERFLOW_SQLPEER", bin)
	return args
}
