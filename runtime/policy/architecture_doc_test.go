package policy

import (
	"os"
	"strings"
	"testing"
)

// TestArchitectureDoc holds docs/architecture.md to the code: its table of
// registered policies is Registry (names, order, scales, defaults), and its
// worked example is example_backlog_test.go's, word for word, registered
// the way Registry registers a per-query policy.
func TestArchitectureDoc(t *testing.T) {
	b, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	_, table, ok := strings.Cut(doc, "The registered policies")
	if !ok {
		t.Fatal(`docs/architecture.md: no "The registered policies" table`)
	}
	var rows [][]string
	for _, line := range strings.Split(table, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if len(rows) > 0 {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if cells[0] == "Policy" || strings.HasPrefix(cells[0], "---") {
			continue
		}
		rows = append(rows, cells)
	}
	reg := Registry()
	if len(rows) != len(reg) {
		t.Errorf("the doc's table has %d policies, the registry %d", len(rows), len(reg))
	}
	for i := range min(len(rows), len(reg)) {
		r, e := rows[i], reg[i]
		if len(r) < 4 || r[0] != e.Name || r[1] != e.Scale.String() || strings.HasPrefix(r[2], "yes") != e.Default {
			t.Errorf("doc row %d %q, registry %s (%s, default %v)", i+1, r, e.Name, e.Scale, e.Default)
		}
	}

	_, adding, ok := strings.Cut(doc, "## Adding a policy")
	if !ok {
		t.Fatal(`docs/architecture.md: no "## Adding a policy"`)
	}
	blocks := goBlocks(adding)
	if len(blocks) < 2 {
		t.Fatalf("docs/architecture.md: %d Go blocks under Adding a policy, want the policy and its registration line", len(blocks))
	}
	src, err := os.ReadFile("example_backlog_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, example, _ := strings.Cut(string(src), "// example:begin\n")
	example, _, _ = strings.Cut(example, "// example:end")
	if strings.TrimSpace(blocks[0]) != strings.TrimSpace(example) {
		t.Errorf("the doc's example is not example_backlog_test.go's:\n%s\n--- the test's:\n%s", blocks[0], example)
	}
	line := strings.TrimSpace(blocks[1])
	if !strings.HasPrefix(line, `{Name: "backlog", Scale: PerQuery, `) || !strings.Contains(line, "New: func(Settings) (Policy, error) { return Backlog{") {
		t.Errorf("the doc's registration line %q is not an Entry of a per-query policy", line)
	}
	reg1, err := os.ReadFile("registry.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(reg1), "func Registry() []Entry") || !strings.Contains(string(reg1), "// Per query: re-plan policies") {
		t.Error("registry.go no longer has the Registry list the doc names")
	}
}

// goBlocks are the ```go code blocks of a Markdown text.
func goBlocks(md string) []string {
	var out []string
	for {
		_, rest, ok := strings.Cut(md, "```go\n")
		if !ok {
			return out
		}
		block, after, _ := strings.Cut(rest, "```")
		out = append(out, block)
		md = after
	}
}
