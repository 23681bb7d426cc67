package tpchcmd

import (
	"os"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/bench/benchtest"
)

func TestBenchTPCHRunsThePeerWithItsFlags(t *testing.T) {
	argsFile := benchtest.FakeSQLPeer(t, 0)
	code, out, errs := runCLI(t, "", "bench", "tpch", "--sf", "0.1,1", "--reps", "5", "--queries", "q1,q21", "--types", "double", "--format", "json")
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
	for _, want := range []string{"tpch --sf 0.1,1", "--reps 5", "--queries q1,q21", "--types double", "--format json", "--peer duckdb"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("peer args %q lack %q", got, want)
		}
	}
}

func TestBenchTPCHChecksItsFlagsFirst(t *testing.T) {
	benchtest.FakeSQLPeer(t, 0)
	for _, args := range [][]string{{"--sf", "0"}, {"--queries", "q23"}, {"--peer", "sqlite"}, {"--types", "float"}} {
		code, _, errs := runCLI(t, "", append([]string{"bench", "tpch"}, args...)...)
		if code != exitBadInput {
			t.Errorf("%v: exit %d: %s", args, code, errs)
		}
	}
}

// --peer none runs tierflow alone, in this process.
func TestBenchTPCHWithoutAPeer(t *testing.T) {
	t.Setenv("TIERFLOW_SQLPEER", "/nonexistent")
	code, out, errs := runCLI(t, "", "bench", "tpch", "--peer", "none", "--sf", "0.002", "--reps", "1", "--queries", "q1", "--types", "double", "--data", t.TempDir())
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "TIERFLOW MS") || !strings.Contains(out, "q01") || strings.Contains(out, "DUCKDB") {
		t.Fatalf("table:\n%s", out)
	}
	if !strings.Contains(errs, "lineitem") {
		t.Fatalf("no progress:\n%s", errs)
	}
}
