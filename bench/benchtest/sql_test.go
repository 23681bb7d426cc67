package benchtest_test

import (
	"os"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/bench/benchtest"
	"github.com/tierflow/tierflow/bench/sql"
	"github.com/tierflow/tierflow/internal/cli"
)

// bench/sql's tests (the DuckDB peer's front: flags passed through, its exit
// code kept) run here, in this binary, rather than in one of their own.

// runSQL runs `tierflow bench sql ...` (args from "bench") and returns the
// exit code and both streams.
var runSQL = captured(sql.Command)

func TestBenchSQLRunsThePeerWithItsFlags(t *testing.T) {
	argsFile := benchtest.FakeSQLPeer(t, 0)
	code, out, errs := runSQL(t, "bench", "sql", "--peer", "duckdb", "--rows", "1M,10M", "--reps", "5", "--queries", "topn", "--format", "json")
	if code != cli.ExitOK {
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
	benchtest.FakeSQLPeer(t, 2)
	if code, _, _ := runSQL(t, "bench", "sql"); code != exitBadInput {
		t.Fatalf("exit %d, want %d", code, exitBadInput)
	}
}

func TestBenchSQLRejectsAnUnknownPeer(t *testing.T) {
	benchtest.FakeSQLPeer(t, 0)
	code, _, errs := runSQL(t, "bench", "sql", "--peer", "sqlite")
	if code != exitBadInput || !strings.Contains(errs, "the only peer is duckdb") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}
