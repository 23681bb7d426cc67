package dataflow_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

// panicky panics in the callback named by where.
type panicky struct {
	dataflow.Base
	where string
}

func (p *panicky) Open(*dataflow.Context, *dataflow.Capability) error {
	if p.where == "open" {
		panic("boom in open")
	}
	return nil
}

func (p *panicky) OnBatch(_ *dataflow.Context, _ int, b dataflow.Batch, _ *dataflow.Capability) error {
	b.Record.Release()
	if p.where == "batch" {
		var m map[string]int
		m["x"] = 1 // a nil map write: a runtime error, as a real bug would be
	}
	return nil
}

func (p *panicky) Produce(*dataflow.Context) (bool, error) {
	if p.where == "produce" {
		panic(errors.New("boom in produce"))
	}
	return true, nil
}

func (p *panicky) Close(*dataflow.Context) error {
	if p.where == "close" {
		panic("boom in close")
	}
	return nil
}

// A panic in any operator callback, a source's Produce or an operator's
// Close fails the run with ErrPanic and a stack, stepped or concurrent; the
// process goes on, and nothing leaks.
func TestPanicBecomesError(t *testing.T) {
	for _, where := range []string{"open", "batch", "produce", "close"} {
		for _, mode := range []string{"stepped", "concurrent"} {
			t.Run(where+"/"+mode, func(t *testing.T) {
				mem := checkedAlloc(t)
				g := &dataflow.Graph{Query: "panic"}
				var src, mid int
				if where == "produce" {
					src = g.AddOperator(op("src", 0, 1, []int{0}, func(dataflow.Instance) dataflow.Operator { return &panicky{where: where} }))
				} else {
					src = g.AddOperator(sliceSource("src", []int{0}, func(int) []dataflow.Batch {
						return []dataflow.Batch{{Epoch: 0, Record: kvRecord(mem, 0, 4)}}
					}))
				}
				mid = g.AddOperator(op("bad", 1, 1, []int{0}, func(dataflow.Instance) dataflow.Operator { return &panicky{where: where} }))
				var got builtin.Captured
				defer got.Release()
				sink := g.AddOperator(capture("sink", 1, []int{0}, &got))
				g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: src}, To: dataflow.Port{Op: mid}})
				g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: mid}, To: dataflow.Port{Op: sink}})
				var err error
				if mode == "stepped" {
					ws, berr := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem})
					if berr != nil {
						t.Fatal(berr)
					}
					err = dataflow.StepUntilDone(ws, 100)
					if where == "close" && err == nil {
						// Close runs when the instance finishes; a stepped
						// run reports it from there.
						t.Fatal("stepped run with a panicking Close succeeded")
					}
				} else {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					err = dataflow.Run(ctx, g, dataflow.Config{Allocator: mem})
				}
				if !errors.Is(err, dataflow.ErrPanic) {
					t.Fatalf("err = %v, want ErrPanic", err)
				}
				if !strings.Contains(err.Error(), "boom") && !strings.Contains(err.Error(), "nil map") {
					t.Fatalf("err = %v: does not say what panicked", err)
				}
				if st := dataflow.PanicStack(err); !strings.Contains(string(st), "panic_test.go") {
					t.Fatalf("stack does not reach the panicking code:\n%s", st)
				}
			})
		}
	}
}
