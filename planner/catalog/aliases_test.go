package catalog

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/planner/internal/yamlx"
)

// aliased is a catalog of k models, each of k variants, each of k profile
// rows, all aliases of one: (k+1)^3 rows' worth of nodes in O(k) lines.
func aliased(k int) string {
	var b strings.Builder
	b.WriteString(`models:
  - &M
    name: m
    inputs: [{name: a, type: DOUBLE}]
    outputs: [{name: ok, type: BOOLEAN}]
    variants:
      - &V
        name: v
        accuracy: 60
        latency_ms: {x2: 1}
        profile:
          - &R {inputs: [70], output: 60}
`)
	b.WriteString(strings.Repeat("          - *R\n", k))
	b.WriteString(strings.Repeat("      - *V\n", k))
	b.WriteString(strings.Repeat("  - *M\n", k))
	return b.String()
}

// The loaders follow each alias to its anchor, which skipped the bound
// yaml.v3's own decoder puts on aliasing: 6.8 KB of aliases of aliases
// took 5.6 s and 980 MB before the first error, and the same nested once
// more would take hours. Now a document that its aliases expand past
// MaxExpandedNodes is refused at its first alias, before any of it is
// walked; aliases within the bound (streams sharing a column list) load.
func TestAliasesExpandWithinABound(t *testing.T) {
	_, err := Parse("bomb.yaml", []byte(aliased(200)))
	if err == nil || !strings.Contains(err.Error(), "bomb.yaml:13:13: ") || !strings.Contains(err.Error(), fmt.Sprintf("more than %d nodes", yamlx.MaxExpandedNodes)) {
		t.Fatalf("200 x 200 x 200 aliased rows: %v, want refused at the first alias for the bound", err)
	}
	c, err := Parse("shared.yaml", []byte(`streams:
  - {name: a, rate: 1, columns: &cols [{name: id, type: BIGINT}, {name: ts, type: TIMESTAMP}]}
  - {name: b, rate: 2, columns: *cols}
`))
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Stream("b"); s == nil || len(s.Columns) != 2 || s.Columns[1].Name != "ts" {
		t.Fatalf("stream b: %+v, want a's two columns through the alias", s)
	}
}
