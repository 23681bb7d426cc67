package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunFollowsDuckDBNumericRules end to end, in both modes: CAST of a
// DOUBLE column to INT rounds half to even (a literal, DuckDB's DECIMAL,
// half away from zero), comparisons with NULL are NULL
// (an empty CSV field), and an overflowing sum or an out-of-range CAST fails
// the query (exit 1) naming the expression.
func TestRunFollowsDuckDBNumericRules(t *testing.T) {
	t.Parallel() // in-process CLIs over its own files and embedded cluster
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "t.csv"), []byte("d,i\n2.5,9223372036854775807\n-2.5,1\n"), 0o644)
	script := func(name, sel string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte("CREATE TABLE t (d DOUBLE, i BIGINT) FROM FILE 't.csv' FORMAT CSV;\n"+sel+"\n"), 0o644)
		return p
	}
	good := script("good.sql", "SELECT CAST(d AS INT) AS r, NULL = NULL AS n, d = NULL AS m, CAST(1.5 AS BIGINT) AS c FROM t;")
	overflow := script("overflow.sql", "SELECT i + 1 AS j FROM t;")
	cast := script("cast.sql", "SELECT CAST(d * 1e10 AS INT) AS r FROM t;")
	for _, mode := range []string{"--local", "--local=false"} {
		code, out, errs := runCLI(t, "", "run", mode, "--format", "csv", good)
		if code != exitOK || out != "r,n,m,c\n2,,,2\n-2,,,2\n" {
			t.Fatalf("%s: exit %d, stdout %q\n%s", mode, code, out, errs)
		}
		code, _, errs = runCLI(t, "", "run", mode, overflow)
		if code != exitFailure || !strings.Contains(errs, "(i + 1): integer overflow") {
			t.Fatalf("%s overflow: exit %d: %s", mode, code, errs)
		}
		code, _, errs = runCLI(t, "", "run", mode, cast)
		if code != exitFailure || !strings.Contains(errs, "CAST((d * 1e+10) AS INT): value out of range") {
			t.Fatalf("%s cast: exit %d: %s", mode, code, errs)
		}
	}
}
