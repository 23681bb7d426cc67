package main

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestExitCodes holds every command to one rule: 0 success, 1 the query or
// the system failed, 2 bad input (syntax, schema, a file that is not there,
// bad flags or arguments, a broken catalog or infrastructure file). What goes
// wrong is said on stderr, naming what and where, without a Go panic or
// stack; each case says how many lines it may take (a query error shows its
// line and a caret, a broken file one line per problem).
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	syntax := write("syntax.sql", "SELECT a FORM t;\n")
	unbound := write("unbound.sql", "SELECT x FROM nowhere;\n")
	ok := write("ok.sql", "CREATE STREAM s (k INT, ts TIMESTAMP) FROM FILE 'd.csv' FORMAT CSV;\nSELECT k FROM s;\n")
	write("d.csv", "k,ts\n1,2024-01-01 00:00:00\nx,2024-01-01 00:00:01\n")
	noFile := write("nofile.sql", "CREATE STREAM s (k INT, ts TIMESTAMP) FROM FILE 'nothere.csv' FORMAT CSV;\nSELECT k FROM s;\n")
	natsQuery := write("nats.sql", "CREATE STREAM s (k INT, ts TIMESTAMP) FROM NATS 'x.y' FORMAT JSON;\nSELECT k FROM s LIMIT 1;\n")
	badRow := write("badrow.sql", "CREATE STREAM s (k INT, ts TIMESTAMP) FROM FILE 'd.csv' FORMAT CSV;\nSELECT k FROM s;\n")
	badYAML := write("badyaml.yaml", "models: [\n")
	badCat := write("badcat.yaml", "models:\n  - {task: x, colour: red}\nstreams: 3\n")
	badInf := write("badinf.yaml", "tiers: edge\nworkerz: []\n")
	hugeInf := write("huge.yaml", "tiers: [{name: edge}]\nworker_types: [{name: x, price: 1}]\nworkers: [{name: w, type: x, tier: edge, count: 9223372036854775807}]\n")
	missing := filepath.Join(dir, "missing")
	// A NATS URL nothing listens on: connecting fails at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "nats://" + l.Addr().String()
	l.Close()

	cases := []struct {
		args  []string
		code  int
		want  string // a substring of stderr
		lines int    // at most this many lines of stderr that are not progress ("-- ...")
	}{
		// Unknown commands, subcommands and arguments.
		{[]string{"nothing"}, 2, `unknown command "nothing" for "tierflow"`, 1},
		{[]string{"bench"}, 2, `missing subcommand for "tierflow bench": want one of inference`, 1},
		{[]string{"bench", "nothing"}, 2, `unknown command "nothing" for "tierflow bench"`, 1},
		{[]string{"import"}, 2, `missing subcommand for "tierflow import"`, 1},
		{[]string{"completion", "tcsh"}, 2, `unknown command "tcsh" for "tierflow completion"`, 1},
		{[]string{"version", "extra"}, 2, `unknown command "extra"`, 1},
		{[]string{"run"}, 2, "accepts 1 arg(s), received 0", 1},
		{[]string{"explain", "a.sql", "b.sql"}, 2, "accepts 1 arg(s), received 2", 1},
		{[]string{"publish", "x"}, 2, "accepts 2 arg(s), received 1", 1},
		{[]string{"import", "jellybean"}, 2, "accepts 1 arg(s), received 0", 1},
		// Bad flags.
		{[]string{"run", "--bogus", unbound}, 2, "unknown flag: --bogus", 1},
		{[]string{"explain", "--strategy", "fastest", ok}, 2, `--strategy: unknown strategy "fastest" (known: [auto`, 1},
		{[]string{"explain", "--profile", "p99", ok}, 2, `--profile: `, 1},
		{[]string{"fmt", "--check", "--write", syntax}, 2, "exclude each other", 1},
		{[]string{"repl", "--bogus"}, 2, "unknown flag: --bogus", 1},
		{[]string{"profile"}, 2, "profile needs --catalog FILE", 1},
		{[]string{"bench", "planner", "--bogus"}, 2, "unknown flag: --bogus", 1},
		{[]string{"coordinator", "--bogus"}, 2, "unknown flag: --bogus", 1},
		{[]string{"worker", "--nats", dead}, 2, "--tier is required", 1},
		{[]string{"submit", unbound}, 2, "--nats URL is required", 1},
		{[]string{"publish", "--nats", dead, "--format", "xml", noFile, "s"}, 2, "--format xml", 1},
		{[]string{"devices", "--format", "xml"}, 2, `unknown --format "xml"`, 1},
		{[]string{"run", "--on-error", "maybe", unbound}, 2, `unknown --on-error "maybe"`, 1},
		{[]string{"run", "--local", "--processes", unbound}, 2, "exclude each other", 1},
		{[]string{"run", "--heartbeat", "-1s", unbound}, 2, "--heartbeat -1s: want a positive interval", 1},
		// Files that are not there.
		{[]string{"run", missing + ".sql"}, 2, missing + ".sql: no such file", 1},
		{[]string{"explain", missing + ".sql"}, 2, missing + ".sql: no such file", 1},
		{[]string{"fmt", missing + ".sql"}, 2, missing + ".sql: no such file", 1},
		{[]string{"repl", "-f", missing + ".sql"}, 2, missing + ".sql: no such file", 1},
		{[]string{"run", "--catalog", missing + ".yaml", unbound}, 2, missing + ".yaml: no such file", 1},
		{[]string{"explain", "--infra", missing + ".yaml", unbound}, 2, missing + ".yaml: no such file", 1},
		{[]string{"import", "jellybean", missing, "--out", filepath.Join(dir, "out")}, 2, missing, 8},
		{[]string{"run", "--local", noFile}, 2, "nofile.sql:2:15: stream s: bad file: open nothere.csv: no such file", 1},
		{[]string{"run", noFile}, 2, "nofile.sql:2:15: stream s: bad file: open nothere.csv: no such file", 1},
		{[]string{"repl", "-f", noFile}, 2, "nothere.csv: no such file", 1},
		// A row that does not fit its schema: the file is bad input.
		{[]string{"run", "--local", badRow}, 2, `d.csv:3: column "k": want an integer, got "x"`, 1},
		{[]string{"run", badRow}, 2, `d.csv:3: column "k": want an integer, got "x"`, 1},
		{[]string{"repl", "-f", badRow}, 2, `d.csv:3: column "k"`, 1},
		{[]string{"run", "--output", filepath.Join(missing, "out.csv"), unbound}, 2, "out.csv: no such file", 1},
		// Broken catalogs and infrastructure files: file:line:col, every
		// problem at once.
		{[]string{"run", "--catalog", badYAML, unbound}, 2, "badyaml.yaml:1:1: did not find expected node content", 1},
		{[]string{"explain", "--catalog", badCat, unbound}, 2, "badcat.yaml:2:15: model: unknown field \"colour\"", 5},
		{[]string{"repl", "--catalog", badCat, "-c", "SHOW MODELS;"}, 2, "badcat.yaml:3:10: streams: want a list", 5},
		{[]string{"profile", "--catalog", badCat}, 2, "badcat.yaml:2:5: model: missing required field \"name\"", 5},
		{[]string{"run", "--infra", badInf, unbound}, 2, "badinf.yaml:2:1: infrastructure: unknown field \"workerz\"", 5},
		{[]string{"explain", "--infra", badInf, unbound}, 2, "badinf.yaml:1:8: tiers: want a list", 5},
		{[]string{"repl", "--infra", badInf, "-c", "SHOW TIERS;"}, 2, "badinf.yaml:1:1: infrastructure: missing required field \"worker_types\"", 5},
		{[]string{"coordinator", "--infra", badInf}, 2, "badinf.yaml:", 5},
		{[]string{"explain", "--infra", hugeInf, ok}, 2, "huge.yaml:3:49: worker.count: 9223372036854775807 machines is more than 10000", 1},
		// Queries that are wrong: file:line:col.
		{[]string{"run", syntax}, 2, `syntax.sql:1:10: unexpected "FORM", expected "FROM"`, 1},
		{[]string{"run", "--local", unbound}, 2, `unbound.sql:1:15: unknown stream, table or view "nowhere"`, 1},
		{[]string{"explain", syntax}, 2, `syntax.sql:1:10: unexpected "FORM"`, 3},
		{[]string{"explain", unbound}, 2, `unbound.sql:1:15: unknown stream, table or view "nowhere"`, 3},
		{[]string{"fmt", syntax}, 2, `syntax.sql:1:10: unexpected "FORM"`, 3},
		{[]string{"repl", "-f", unbound}, 2, `unbound.sql:1:15: unknown stream, table or view "nowhere"`, 3},
		{[]string{"repl", "-c", "SELECT k FROM s"}, 2, `-c:1:15: unknown stream, table or view "s"`, 3},
		{[]string{"explain", "--analyze", syntax}, 2, `syntax.sql:1:10: unexpected "FORM"`, 1},
		// Failures while running: 1.
		{[]string{"run", "--nats", dead, natsQuery}, 1, "connect to " + dead, 1},
		{[]string{"run", "--local", "--nats", dead, natsQuery}, 1, "connect to " + dead, 1},
		{[]string{"repl", "--nats", dead, "-f", natsQuery}, 1, "connect to " + dead, 1},
		{[]string{"coordinator", "--nats", dead}, 1, "connect to " + dead, 1},
		{[]string{"submit", "--nats", dead, noFile}, 1, "connect to " + dead, 1},
		{[]string{"fmt", "--check", badRow}, 1, "", 0}, // not in canonical form: its name on stdout
		// And success.
		{[]string{"fmt", "--check", "../../examples/streaming/query.sql"}, 0, "", 0},
		{[]string{"version"}, 0, "", 0},
		{[]string{"completion", "bash"}, 0, "", 0},
	}
	stack := regexp.MustCompile(`panic:|goroutine \d+ \[|\.go:\d+ \+0x`)
	for _, c := range cases {
		name := strings.ReplaceAll(strings.Join(c.args, " "), dir+"/", "")
		t.Run(name, func(t *testing.T) {
			code, _, errs := runCLI(t, "", c.args...)
			var lines []string
			for _, line := range strings.Split(strings.TrimRight(errs, "\n"), "\n") {
				if line != "" && !strings.HasPrefix(line, "-- ") {
					lines = append(lines, line)
				}
			}
			if code != c.code || !strings.Contains(errs, c.want) || len(lines) > c.lines || stack.MatchString(errs) {
				t.Errorf("exit %d (want %d), stderr (want %q in at most %d lines):\n%s", code, c.code, c.want, c.lines, errs)
			}
		})
	}
}
