package dataflow_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

func TestValidateReportsEveryProblem(t *testing.T) {
	var got builtin.Captured
	src := sliceSource("src", []int{0, 1}, func(int) []dataflow.Batch { return nil })
	three := capture("three", 2, []int{0, 1, 2}, &got)
	tests := []struct {
		name  string
		build func(g *dataflow.Graph)
		want  []string
	}{
		{"ok", func(g *dataflow.Graph) {
			s, c := g.AddOperator(src), g.AddOperator(three)
			g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: s}, To: dataflow.Port{Op: c}, Kind: dataflow.Exchange, Partition: dataflow.HashColumns(0)})
			g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: s}, To: dataflow.Port{Op: c, Port: 1}, Kind: dataflow.Broadcast})
		}, nil},
		{"pipeline 2->3, unfed input, bad port", func(g *dataflow.Graph) {
			s, c := g.AddOperator(src), g.AddOperator(three)
			g.Connect(s, 0, c, 0)
			g.Connect(s, 1, c, 5)
		}, []string{"pipeline from 2 to 3 instances", "src has 1 outputs", "three has 2 inputs", "input 1 has no incoming edge"}},
		{"exchange without key, bad shares", func(g *dataflow.Graph) {
			s, c := g.AddOperator(src), g.AddOperator(three)
			g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: s}, To: dataflow.Port{Op: c}, Kind: dataflow.Exchange})
			g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: s}, To: dataflow.Port{Op: c, Port: 1}, Kind: dataflow.Balance, Shares: []float64{1, 2}})
		}, []string{"exchange without a partition function", "2 shares for 3 receiver instances"}},
		{"cycle", func(g *dataflow.Graph) {
			a := g.AddOperator(passthrough("a", nil))
			b := g.AddOperator(passthrough("b", nil))
			g.Connect(a, 0, b, 0)
			g.Connect(b, 0, a, 0)
		}, []string{"cycle through"}},
		{"no constructor, negative worker", func(g *dataflow.Graph) {
			g.AddOperator(dataflow.OperatorSpec{Name: "x", Workers: []int{-1}})
		}, []string{"x): no constructor", "negative worker"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &dataflow.Graph{Query: "v"}
			tt.build(g)
			err := g.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, dataflow.ErrInvalidGraph) {
				t.Fatalf("got %v, want ErrInvalidGraph", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if _, err := dataflow.BuildLocal(g, dataflow.Config{}); !errors.Is(err, dataflow.ErrInvalidGraph) {
				t.Fatalf("BuildLocal accepted an invalid graph: %v", err)
			}
		})
	}
}

func TestGraphWorkersCountsPlacement(t *testing.T) {
	g := &dataflow.Graph{}
	g.AddOperator(passthrough("a", nil))
	if n := g.Workers(); n != 1 {
		t.Fatalf("workers = %d, want 1", n)
	}
	g.AddOperator(passthrough("b", []int{0, 4}))
	if n := g.Workers(); n != 5 {
		t.Fatalf("workers = %d, want 5", n)
	}
}
