// Package treeprint is the one indented-tree renderer that the logical plan
// printer and EXPLAIN's text form share, so goldens of both read alike.
package treeprint

import "strings"

// Node is a printable tree node: a head line, detail lines under it, children.
type Node struct {
	Head     string
	Details  []string
	Children []*Node
}

// String renders the tree with box-drawing connectors.
func (n *Node) String() string {
	var b strings.Builder
	n.write(&b, "", "")
	return b.String()
}

func (n *Node) write(b *strings.Builder, first, rest string) {
	b.WriteString(first)
	b.WriteString(n.Head)
	b.WriteByte('\n')
	pipe := rest + "│  "
	if len(n.Children) == 0 {
		pipe = rest + "   "
	}
	for _, d := range n.Details {
		b.WriteString(strings.TrimRight(pipe, " "))
		if d != "" {
			b.WriteString(strings.Repeat(" ", len([]rune(pipe))-len([]rune(strings.TrimRight(pipe, " ")))))
			b.WriteString(d)
		}
		b.WriteByte('\n')
	}
	for i, c := range n.Children {
		if i == len(n.Children)-1 {
			c.write(b, rest+"└─ ", rest+"   ")
		} else {
			c.write(b, rest+"├─ ", rest+"│  ")
		}
	}
}
