package benchtest_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/bench/benchtest"
	"github.com/tierflow/tierflow/bench/tpch/tpchcmd"
	"github.com/tierflow/tierflow/internal/cli"
)

// runTPCH runs `tierflow bench tpch ...` (args from "bench") and returns
// the exit code and both streams.
var runTPCH = captured(tpchcmd.Command)

func TestBenchTPCHRunsThePeerWithItsFlags(t *testing.T) {
	argsFile := benchtest.FakeSQLPeer(t, 0)
	code, out, errs := runTPCH(t, "bench", "tpch", "--sf", "0.1,1", "--reps", "5", "--queries", "q1,q21", "--types", "double", "--format", "json", "--memory-limit", "1GiB")
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
	for _, want := range []string{"tpch --sf 0.1,1", "--reps 5", "--queries q1,q21", "--types double", "--format json", "--peer duckdb", "--memory-limit 1GiB"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("peer args %q lack %q", got, want)
		}
	}
}

func TestBenchTPCHChecksItsFlagsFirst(t *testing.T) {
	benchtest.FakeSQLPeer(t, 0)
	for _, args := range [][]string{{"--sf", "0"}, {"--queries", "q23"}, {"--peer", "sqlite"}, {"--types", "float"}, {"--memory-limit", "lots"}} {
		code, _, errs := runTPCH(t, append([]string{"bench", "tpch"}, args...)...)
		if code != cli.ExitBadInput {
			t.Errorf("%v: exit %d: %s", args, code, errs)
		}
	}
}

// --peer none runs tierflow alone, in this process.
func TestBenchTPCHWithoutAPeer(t *testing.T) {
	t.Setenv("TIERFLOW_SQLPEER", "/nonexistent")
	code, out, errs := runTPCH(t, "bench", "tpch", "--peer", "none", "--sf", "0.002", "--reps", "1", "--queries", "q1", "--types", "double", "--data", t.TempDir())
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "TIERFLOW MS") || !strings.Contains(out, "q01") || strings.Contains(out, "DUCKDB") {
		t.Fatalf("table:\n%s", out)
	}
	if !strings.Contains(errs, "lineitem") {
		t.Fatalf("no progress:\n%s", errs)
	}
}

// Under --memory-limit each query runs within that budget: the table shows
// the most it held, never past the limit, and a limit too small for a
// query fails it naming the budget, in the table and the exit code.
func TestBenchTPCHUnderAMemoryLimit(t *testing.T) {
	t.Setenv("TIERFLOW_SQLPEER", "/nonexistent")
	data := t.TempDir()
	run := func(limit string) (int, string) {
		code, out, errs := runTPCH(t, "bench", "tpch", "--peer", "none", "--sf", "0.002", "--reps", "1", "--queries", "q1,q6",
			"--data", data, "--memory-limit", limit)
		return code, out + errs
	}
	code, out := run("64MiB")
	if code != cli.ExitOK || !strings.Contains(out, "PEAK MIB") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || (f[0] != "q01" && f[0] != "q06") {
			continue
		}
		peak, err := strconv.ParseFloat(f[4], 64)
		if err != nil || peak <= 0 || peak > 64 {
			t.Errorf("%s: peak %q MiB, want within (0, 64]:\n%s", f[0], f[4], out)
		}
	}
	code, out = run("16KiB")
	if code == cli.ExitOK || !strings.Contains(out, "over its memory limit of 16.0 KiB") {
		t.Fatalf("16 KiB: exit %d:\n%s", code, out)
	}
}
