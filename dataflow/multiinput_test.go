package dataflow_test

import (
	"fmt"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

// gatedSource emits its batches only as far as the test allows.
type gatedSource struct {
	*builtin.SliceSource
	allowed *int
}

func (g *gatedSource) Produce(ctx *dataflow.Context) (bool, error) {
	if *g.allowed <= 0 {
		return false, nil
	}
	*g.allowed--
	return g.SliceSource.Produce(ctx)
}

// epochCounter counts rows per epoch on two inputs and, when an epoch
// completes, emits its count on output 0 (fed by both inputs) and logs it.
// Input 1 is also forwarded on output 1.
type epochCounter struct {
	dataflow.Base
	mem       memory.Allocator
	counts    [2]map[dataflow.Epoch]int64
	log       *[]string
	frontiers *[2][]dataflow.Epoch
}

func (c *epochCounter) OnBatch(ctx *dataflow.Context, input int, b dataflow.Batch, cap *dataflow.Capability) error {
	if c.counts[input] == nil {
		c.counts[input] = map[dataflow.Epoch]int64{}
	}
	c.counts[input][b.Epoch] += b.Record.NumRows()
	if input == 1 {
		b.Record.Retain()
		if err := ctx.Emit(1, cap, b.Record); err != nil {
			return err
		}
	}
	b.Record.Release()
	return ctx.NotifyAt(cap, b.Epoch)
}

func (c *epochCounter) OnNotify(ctx *dataflow.Context, cap *dataflow.Capability) error {
	e := cap.Epoch()
	*c.log = append(*c.log, fmt.Sprintf("e%d:%d+%d", e, c.counts[0][e], c.counts[1][e]))
	return ctx.Emit(0, cap, kvRecord(c.mem, int(e), 1))
}

func (c *epochCounter) OnFrontier(_ *dataflow.Context, input int, f dataflow.Epoch) error {
	c.frontiers[input] = append(c.frontiers[input], f)
	return nil
}

func TestNotificationWaitsForTheSlowestInput(t *testing.T) {
	mem := checkedAlloc(t)
	var out0, out1 builtin.Captured
	defer out0.Release()
	defer out1.Release()
	var log []string
	var frontiers [2][]dataflow.Epoch
	allowA := 1
	g := &dataflow.Graph{Query: "m"}
	a := g.AddOperator(op("a", 0, 1, nil, func(dataflow.Instance) dataflow.Operator {
		var bs []dataflow.Batch
		for i := 0; i < 10; i++ {
			bs = append(bs, dataflow.Batch{Epoch: dataflow.Epoch(i / 2), Record: kvRecord(mem, i, 1)})
		}
		return &gatedSource{SliceSource: builtin.NewSliceSource(bs), allowed: &allowA}
	}))
	b := g.AddOperator(sliceSource("b", nil, func(int) []dataflow.Batch {
		return []dataflow.Batch{
			{Epoch: 0, Record: kvRecord(mem, 0, 10)},
			{Epoch: 2, Record: kvRecord(mem, 0, 20)},
			{Epoch: 4, Record: kvRecord(mem, 0, 40)},
		}
	}))
	cnt := g.AddOperator(dataflow.OperatorSpec{
		Name: "count", Inputs: 2, Outputs: 2,
		New: func(dataflow.Instance) (dataflow.Operator, error) {
			return &epochCounter{mem: mem, log: &log, frontiers: &frontiers}, nil
		},
	})
	s0 := g.AddOperator(capture("s0", 1, nil, &out0))
	s1 := g.AddOperator(capture("s1", 1, nil, &out1))
	g.Connect(a, 0, cnt, 0)
	g.Connect(b, 0, cnt, 1)
	g.Connect(cnt, 0, s0, 0)
	g.Connect(cnt, 1, s1, 0)
	ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer ws[0].Close()
	w := ws[0]
	for i := 0; i < 10; i++ {
		if _, err := w.Step(); err != nil {
			t.Fatal(err)
		}
	}
	// b is finished, a is stuck at epoch 0: nothing is complete on both
	// inputs, yet output 1 (which does not wait for a) is closed.
	if len(log) != 0 {
		t.Fatalf("notified %v while input a is at epoch 0", log)
	}
	if f := frontiers[1]; len(f) == 0 || f[len(f)-1] != dataflow.Closed {
		t.Fatalf("input b frontiers %v, want ending closed", f)
	}
	if n := out1.Rows(); n != 70 {
		t.Fatalf("s1 got %d rows, want all 70 of input b", n)
	}
	if c := out0.Completed(); len(c) != 0 {
		t.Fatalf("s0 completed %v while input a is at epoch 0", c)
	}
	// Let a move to epoch 1 (batches 2 and 3): epoch 0 completes.
	allowA = 2
	for i := 0; i < 3; i++ {
		_, _ = w.Step()
	}
	if want := []string{"e0:2+10"}; fmt.Sprint(log) != fmt.Sprint(want) {
		t.Fatalf("log %v, want %v", log, want)
	}
	allowA = 100
	if err := dataflow.StepUntilDone(ws, 100); err != nil {
		t.Fatal(err)
	}
	if want := []string{"e0:2+10", "e1:2+0", "e2:2+20", "e3:2+0", "e4:2+40"}; fmt.Sprint(log) != fmt.Sprint(want) {
		t.Fatalf("log %v, want %v", log, want)
	}
	if f := frontiers[0]; fmt.Sprint(f) != "[1 2 3 4 closed]" {
		t.Fatalf("input a frontiers %v", f)
	}
	checkCompletions(t, &out0)
	checkCompletions(t, &out1)
	if n := out0.Rows(); n != 5 {
		t.Fatalf("s0 got %d rows, want one per epoch", n)
	}
}

// router forwards input i to output i and holds no capability.
type router struct{ dataflow.Base }

func (router) OnBatch(ctx *dataflow.Context, input int, b dataflow.Batch, cap *dataflow.Capability) error {
	return ctx.Emit(input, cap, b.Record)
}

// With connectivity declared, an output waits only for the inputs that can
// cause it: a stalled input 0 does not hold back output 1.
func TestConnectivityLetsIndependentOutputsAdvance(t *testing.T) {
	for _, declared := range []bool{true, false} {
		t.Run(fmt.Sprint("declared=", declared), func(t *testing.T) {
			mem := checkedAlloc(t)
			var out0, out1 builtin.Captured
			defer out0.Release()
			defer out1.Release()
			allowA := 1
			g := &dataflow.Graph{Query: "c"}
			a := g.AddOperator(op("a", 0, 1, nil, func(dataflow.Instance) dataflow.Operator {
				return &gatedSource{SliceSource: builtin.NewSliceSource([]dataflow.Batch{
					{Epoch: 0, Record: kvRecord(mem, 0, 1)}, {Epoch: 5, Record: kvRecord(mem, 1, 1)},
				}), allowed: &allowA}
			}))
			b := g.AddOperator(sliceSource("b", nil, func(int) []dataflow.Batch {
				return []dataflow.Batch{{Epoch: 0, Record: kvRecord(mem, 0, 1)}, {Epoch: 1, Record: kvRecord(mem, 1, 1)}}
			}))
			spec := op("route", 2, 2, nil, func(dataflow.Instance) dataflow.Operator { return router{} })
			if declared {
				spec.Connectivity = [][]bool{{true, false}, {false, true}}
			}
			r := g.AddOperator(spec)
			s0 := g.AddOperator(capture("s0", 1, nil, &out0))
			s1 := g.AddOperator(capture("s1", 1, nil, &out1))
			g.Connect(a, 0, r, 0)
			g.Connect(b, 0, r, 1)
			g.Connect(r, 0, s0, 0)
			g.Connect(r, 1, s1, 0)
			ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			defer ws[0].Close()
			for i := 0; i < 10; i++ {
				if _, err := ws[0].Step(); err != nil {
					t.Fatal(err)
				}
			}
			want := 0
			if declared {
				want = 2
			}
			if c := out1.Completed(); len(c) != want {
				t.Fatalf("s1 completed %v, want %d epochs", c, want)
			}
			if c := out0.Completed(); len(c) != 0 {
				t.Fatalf("s0 completed %v with input a at epoch 0", c)
			}
			allowA = 10
			if err := dataflow.StepUntilDone(ws, 100); err != nil {
				t.Fatal(err)
			}
			if len(out0.Completed()) != 2 || len(out1.Completed()) != 2 {
				t.Fatalf("completed %v and %v", out0.Completed(), out1.Completed())
			}
			checkCompletions(t, &out0)
			checkCompletions(t, &out1)
		})
	}
}
