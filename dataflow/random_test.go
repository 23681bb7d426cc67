package dataflow_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

// randomGraph builds a random layered DAG over 3 workers: sources with
// increasing epochs, layers of pass-through operators with random
// parallelism and placement, every edge kind, ports fed by several edges,
// and one capturing sink fed by every operator nobody else reads. It returns
// how many copies of each source row the sink must receive (broadcast edges
// multiply).
func randomGraph(rng *rand.Rand, got *builtin.Captured) (*dataflow.Graph, map[int64]int) {
	g := &dataflow.Graph{Query: "rnd"}
	placement := func() []int {
		ws := make([]int, 1+rng.IntN(3))
		for i := range ws {
			ws[i] = rng.IntN(3)
		}
		return ws
	}
	read := map[int]bool{}
	var ranges [][2]int // key range of each source
	key := 0
	nsrc := 1 + rng.IntN(2)
	for s := 0; s < nsrc; s++ {
		ws := placement()
		batches := 1 + rng.IntN(6)
		base := key
		key += len(ws) * batches * 4
		ranges = append(ranges, [2]int{base, key})
		epochs := make([]dataflow.Epoch, batches)
		e := dataflow.Epoch(rng.IntN(3))
		for i := range epochs {
			e += dataflow.Epoch(rng.IntN(2))
			epochs[i] = e
		}
		g.AddOperator(op(fmt.Sprint("src", s), 0, 1, ws, func(inst dataflow.Instance) dataflow.Operator {
			return builtin.NewGenerator(batches, func(i int, mem memory.Allocator) (dataflow.Epoch, arrow.Record, error) {
				return epochs[i], kvRecord(mem, base+(inst.Index*batches+i)*4, 4), nil
			})
		}))
	}
	connect := func(from, to int) {
		ps, pr := g.Operators[from].Parallelism(), g.Operators[to].Parallelism()
		kinds := []dataflow.EdgeKind{dataflow.Exchange, dataflow.Broadcast, dataflow.Balance}
		if ps == pr || pr == 1 {
			kinds = append(kinds, dataflow.Pipeline, dataflow.Pipeline)
		}
		e := dataflow.Edge{From: dataflow.Port{Op: from}, To: dataflow.Port{Op: to}, Kind: kinds[rng.IntN(len(kinds))]}
		switch e.Kind {
		case dataflow.Exchange:
			e.Partition = dataflow.HashColumns(rng.IntN(2))
		case dataflow.Balance:
			e.Shares = make([]float64, pr)
			for i := range e.Shares {
				e.Shares[i] = float64(1 + rng.IntN(3))
			}
		}
		g.AddEdge(e)
		read[from] = true
	}
	for layer := 0; layer < 1+rng.IntN(3); layer++ {
		prev := len(g.Operators)
		for i := 0; i < 1+rng.IntN(2); i++ {
			id := g.AddOperator(passthrough(fmt.Sprint("L", layer, "_", i), placement()))
			for _, from := range rng.Perm(prev)[:1+rng.IntN(min(prev, 2))] {
				connect(from, id)
			}
		}
	}
	sink := g.AddOperator(capture("sink", 1, placement(), got))
	for from := 0; from < sink; from++ {
		if !read[from] {
			connect(from, sink)
		}
	}
	expect := map[int64]int{}
	for s, r := range ranges {
		m := pathCopies(g, s, sink)
		for k := r[0]; k < r[1]; k++ {
			expect[int64(k)] = m
		}
	}
	return g, expect
}

// pathCopies counts the copies of one row of operator from arriving at to.
func pathCopies(g *dataflow.Graph, from, to int) int {
	if from == to {
		return 1
	}
	n := 0
	for _, e := range g.Edges {
		if e.From.Op != from {
			continue
		}
		c := pathCopies(g, e.To.Op, to)
		if e.Kind == dataflow.Broadcast {
			c *= g.Operators[e.To.Op].Parallelism()
		}
		n += c
	}
	return n
}

func checkRandomRun(t *testing.T, got *builtin.Captured, expect map[int64]int) {
	t.Helper()
	seen := map[int64]int{}
	for _, b := range got.Batches() {
		for _, k := range keys(b.Record) {
			seen[k]++
		}
	}
	if len(seen) != len(expect) {
		t.Fatalf("%d distinct keys at the sink, want %d", len(seen), len(expect))
	}
	for k, n := range expect {
		if seen[k] != n {
			t.Fatalf("key %d arrived %d times, want %d", k, seen[k], n)
		}
	}
	checkCompletions(t, got)
}

// Random graphs, stepped with workers chosen at random (so messages
// interleave differently every time) and run concurrently: every row
// arrives as often as the paths to the sink say, and no epoch completes
// before its data.
func TestRandomGraphs(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			mem := checkedAlloc(t)
			rng := rand.New(rand.NewPCG(seed, 7))
			var got builtin.Captured
			defer got.Release()
			g, expect := randomGraph(rng, &got)
			ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem, QueueLen: 1 + rng.IntN(4)})
			if err != nil {
				t.Fatal(err)
			}
			idle := 0
			for steps := 0; ; steps++ {
				done := true
				for _, w := range ws {
					done = done && w.Done()
				}
				if done {
					break
				}
				if steps > 100000 || idle > 10*len(ws) {
					for _, w := range ws {
						w.Close()
					}
					t.Fatalf("stuck after %d steps", steps)
				}
				busy, err := ws[rng.IntN(len(ws))].Step()
				if err != nil {
					t.Fatal(err)
				}
				if busy {
					idle = 0
				} else {
					idle++
				}
			}
			checkRandomRun(t, &got, expect)
			t.Logf("%d operators, %d edges, %d keys, %d rows", len(g.Operators), len(g.Edges), len(expect), got.Rows())
			got.Release()

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var again builtin.Captured
			defer again.Release()
			g2, _ := randomGraph(rand.New(rand.NewPCG(seed, 7)), &again)
			if err := dataflow.Run(ctx, g2, dataflow.Config{Allocator: mem, QueueLen: 2}); err != nil {
				t.Fatal(err)
			}
			checkRandomRun(t, &again, expect)
		})
	}
}
