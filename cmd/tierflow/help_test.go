package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// updating reports whether -update was given. The flag is shared with the
// other golden tests of this package: whoever defines it first owns it, and
// TestMain defines it when nobody else does.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// commandPaths lists every subcommand (depth first) as its arguments after
// "tierflow", skipping cobra's hidden helpers.
func commandPaths(c *cobra.Command, prefix []string) [][]string {
	var out [][]string
	for _, sub := range c.Commands() {
		if sub.Hidden || sub.Name() == "help" {
			continue
		}
		p := append(append([]string(nil), prefix...), sub.Name())
		out = append(out, p)
		out = append(out, commandPaths(sub, p)...)
	}
	return out
}

// TestHelpGolden pins `--help` of the root and of every subcommand, so a
// changed flag or example shows up in review. A new subcommand needs its
// golden: go test ./cmd/tierflow -run TestHelpGolden -update
func TestHelpGolden(t *testing.T) {
	root := newRootCmd(&app{})
	root.InitDefaultCompletionCmd() // cobra adds it when the CLI runs
	paths := append([][]string{nil}, commandPaths(root, nil)...)
	want := map[string]bool{}
	for _, p := range paths {
		name := strings.Join(append([]string{"tierflow"}, p...), "_") + ".golden"
		want[name] = true
		t.Run(name, func(t *testing.T) {
			code, out, errs := replCLI(t, "", append(p, "--help")...)
			if code != exitOK || errs != "" {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			if !strings.Contains(out, "Usage:") {
				t.Errorf("no usage:\n%s", out)
			}
			// Commands that do something show how; a group (bench, import)
			// lists its subcommands instead.
			c, _, _ := root.Find(p)
			if len(p) > 0 && c.Runnable() && !c.HasSubCommands() && !strings.Contains(out, "Examples:") && !cobraOwned(p) {
				t.Errorf("%s --help shows no examples", strings.Join(p, " "))
			}
			path := filepath.Join("testdata", "help", name)
			if updating() {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			golden, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v: a new subcommand? go test ./cmd/tierflow -run TestHelpGolden -update", err)
			}
			if out != string(golden) {
				t.Errorf("%s --help changed (accept with -update):\n--- got\n%s\n--- want\n%s", strings.Join(p, " "), out, golden)
			}
		})
	}
	// A golden whose command is gone is stale documentation.
	files, _ := filepath.Glob(filepath.Join("testdata", "help", "*.golden"))
	for _, f := range files {
		if !want[filepath.Base(f)] {
			if updating() {
				_ = os.Remove(f)
				continue
			}
			t.Errorf("%s has no command any more (remove it with -update)", f)
		}
	}
}

// cobraOwned are the commands cobra generates (completion scripts), whose
// help text is cobra's.
func cobraOwned(p []string) bool { return len(p) > 0 && p[0] == "completion" }
