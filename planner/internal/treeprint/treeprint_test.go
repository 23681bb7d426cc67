package treeprint

import "testing"

func TestString(t *testing.T) {
	n := &Node{Head: "a", Details: []string{"x=1"}, Children: []*Node{
		{Head: "b", Children: []*Node{{Head: "d", Details: []string{"y"}}}},
		{Head: "c"},
	}}
	want := "a\n│  x=1\n├─ b\n│  └─ d\n│        y\n└─ c\n"
	if got := n.String(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
