package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestOneRuleForDefaults: run (on the cluster and --local), explain and
// explain --analyze take the catalog and infrastructure from the same
// places (NAME.catalog.yaml before catalog.yaml beside the script, the
// same for infra), each saying on stderr what it loaded; the script's
// CREATE replaces an entry of a catalog found beside it. Before, run read
// neither file, explain read catalog.yaml and infra.yaml, and the CREATE
// failed with "already exists".
func TestOneRuleForDefaults(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("rows.csv", "k,ts\n1,2024-05-01 08:00:00\n2,2024-05-01 08:00:01\n")
	// catalog.yaml is shadowed by q.catalog.yaml; the script redefines rows.
	write("catalog.yaml", "streams:\n  - {name: wrong, source: file, subject: nowhere.csv, format: csv, columns: [{name: k, type: BIGINT}]}\n")
	write("q.catalog.yaml", "streams:\n  - {name: rows, source: nats, subject: never, format: json, columns: [{name: k, type: BIGINT}]}\n")
	write("infra.yaml", `tiers: [{name: edge}, {name: cloud}]
worker_types: [{name: small, price: 1}]
workers:
  - {name: e1, type: small, tier: edge}
  - {name: c1, type: small, tier: cloud}
default_link: {cost_per_gb: 0.1}
`)
	write("q.sql", "CREATE STREAM rows (k BIGINT, ts TIMESTAMP) FROM FILE 'rows.csv' FORMAT CSV;\nSELECT k FROM rows;\n")
	script := filepath.Join(dir, "q.sql")
	want := "-- catalog " + filepath.Join(dir, "q.catalog.yaml") + " (beside the script); infrastructure " + filepath.Join(dir, "infra.yaml") + " (beside the script)\n"
	for _, args := range [][]string{
		{"run", script},
		{"run", "--local", script},
		{"explain", script},
		{"explain", "--analyze", "--rows", "2", script},
	} {
		code, out, errs := runCLI(t, "", args...)
		if code != exitOK {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errs)
			continue
		}
		if !strings.Contains(errs, want) {
			t.Errorf("%v: stderr does not say what it loaded (want %q):\n%s", args, want, errs)
		}
		if args[0] == "run" && !strings.Contains(out, "|    2 |") {
			t.Errorf("%v: the script's CREATE did not replace the catalog's stream:\n%s", args, out)
		}
	}
	// The cluster run starts the workers of the infra.yaml it found.
	_, _, errs := runCLI(t, "", "run", script)
	if !regexp.MustCompile(`-- embedded cluster: 2 workers \(e1 edge, c1 cloud\)`).MatchString(errs) {
		t.Errorf("run did not start infra.yaml's workers:\n%s", errs)
	}
	// Flags win, and a catalog named by --catalog is the user's own: the
	// script's CREATE of a name it has fails at the CREATE.
	code, _, errs := runCLI(t, "", "explain", "--catalog", filepath.Join(dir, "q.catalog.yaml"), "--infra", filepath.Join(dir, "infra.yaml"), script)
	if code != exitBadInput || !strings.Contains(errs, "q.sql:1:1: \"rows\" already exists") || !strings.Contains(errs, "(--catalog)") {
		t.Errorf("explain --catalog: exit %d\n%s", code, errs)
	}
}
