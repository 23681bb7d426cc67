package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRunScriptSessionStatements: SET, SHOW and DESCRIBE in a `tierflow run`
// script act as in the REPL on every path (one executor, embedded cluster,
// worker processes): SET exec.on_error = 'skip' lets the query after it go
// past a bad row that fails it without the SET, SET planner.strategy reaches
// the script's EXPLAIN, SHOW and DESCRIBE print the REPL's tables.
func TestRunScriptSessionStatements(t *testing.T) {
	dir, _ := writeRunFiles(t)
	const create = "CREATE STREAM d (k BIGINT, v BIGINT, ts TIMESTAMP) FROM FILE 'd.csv' FORMAT CSV;\n"
	const query = "SELECT k, count(*) AS n FROM d WHERE v > 5 GROUP BY k, TUMBLE(ts, INTERVAL '10' SECOND);\n"
	script := filepath.Join(dir, "session.sql")
	os.WriteFile(script, []byte(create+`SHOW STREAMS;
DESCRIBE d;
SHOW TIERS;
SET exec.on_error = 'skip';
SET planner.strategy = 'exhaustive';
EXPLAIN SELECT k FROM d;
`+query), 0o644)
	without := filepath.Join(dir, "without.sql")
	os.WriteFile(without, []byte(create+query), 0o644)

	for _, mode := range [][]string{{"--local"}, nil, {"--processes"}} {
		name := "embedded"
		if len(mode) > 0 {
			name = mode[0]
		}
		t.Run(name, func(t *testing.T) {
			t.Setenv(childEnv, "real") // --processes: the children are the real CLI
			args := append(append([]string{"run"}, mode...), "--format", "csv", without)
			if code, _, errs := runCLI(t, "", args...); code != exitBadInput || !strings.Contains(errs, "d.csv:4:") {
				t.Fatalf("without SET the bad row fails the query: exit %d\n%s", code, errs)
			}
			args[len(args)-1] = script
			code, out, errs := runCLI(t, "", args...)
			if code != exitOK {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
			for _, want := range []string{
				"name,columns,source,rate\nd,\"k BIGINT, v BIGINT, ts TIMESTAMP\",file 'd.csv' csv,\n", // SHOW STREAMS
				"column,type\nk,BIGINT\nv,BIGINT\nts,TIMESTAMP\n",                                      // DESCRIBE d
				"tier,locations\nedge,1\nhub,1\ncloud,1\n",                                             // SHOW TIERS: the default infrastructure
				"Plan (strategy exhaustive)",                                                           // SET planner.strategy
				"k,n\n1,1\n2,1\n1,1\n",                                                                 // SET exec.on_error = 'skip'
			} {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
			if !strings.Contains(errs, "dropped: 1 malformed") {
				t.Errorf("stderr: %s", errs)
			}
		})
	}

	// `tierflow explain` plans the script's queries with its SETs too.
	if code, out, errs := runCLI(t, "", "explain", script); code != exitOK || strings.Count(out, "Plan (strategy exhaustive)") != 2 {
		t.Errorf("explain: exit %d\n%s\n%s", code, out, errs)
	}

	// A bad SET or DESCRIBE is bad input at its position, as in the REPL.
	for _, c := range []struct{ stmt, want string }{
		{"SET exec.on_error = 'sometimes';", `bad.sql:2:1: SET exec.on_error: want skip or fail, got "sometimes"`},
		{"SET planner.nope = 1;", "bad.sql:2:5: SET planner.nope: unknown setting"},
		{"DESCRIBE nothing;", `bad.sql:2:1: no model, stream, table, sink or function named "nothing"`},
	} {
		bad := filepath.Join(dir, "bad.sql")
		os.WriteFile(bad, []byte(create+c.stmt+"\n"+query), 0o644)
		for _, mode := range []string{"--local", "--on-error=fail"} {
			code, _, errs := runCLI(t, "", "run", mode, bad)
			if code != exitBadInput || !strings.Contains(errs, c.want) || regexp.MustCompile(`goroutine|panic`).MatchString(errs) {
				t.Errorf("%s %s: exit %d, want 2 and %q:\n%s", mode, c.stmt, code, c.want, errs)
			}
		}
	}
}
