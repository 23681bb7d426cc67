package sql

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakePeer writes a peer program that records its arguments and exits with
// code, and points TIERFLOW_SQLPEER at it.
func fakePeer(t *testing.T, code int) string {
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

func TestBenchSQLRunsThePeerWithItsFlags(t *testing.T) {
	argsFile := fakePeer(t, 0)
	code, out, errs := runCLI(t, "", "bench", "sql", "--peer", "duckdb", "--rows", "1M,10M", "--reps", "5", "--queries", "topn", "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "| query | ratio |") {
		t.Fatalf("peer output not passed through: %q", out)
	}
	got, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--peer duckdb", "--rows 1M,10M", "--reps 5", "--queries topn", "--format json"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("peer args %q lack %q", got, want)
		}
	}
}

func TestBenchSQLKeepsThePeersExitCode(t *testing.T) {
	fakePeer(t, 2)
	if code, _, _ := runCLI(t, "", "bench", "sql"); code != exitBadInput {
		t.Fatalf("exit %d, want %d", code, exitBadInput)
	}
}

func TestBenchSQLRejectsAnUnknownPeer(t *testing.T) {
	fakePeer(t, 0)
	code, _, errs := runCLI(t, "", "bench", "sql", "--peer", "sqlite")
	if code != exitBadInput || !strings.Contains(errs, "the only peer is duckdb") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}
