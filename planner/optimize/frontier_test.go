package optimize_test

import (
	"context"
	"errors"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/tierflow/tierflow/planner/optimize"
)

// point is one plan's accuracy and cost.
type point struct{ acc, cost float64 }

// bruteFrontier enumerates every feasible plan of p independently of the
// optimizer (bruteForceEach) and keeps, per accuracy, the cheapest.
func bruteFrontier(t *testing.T, p *optimize.Problem) []point {
	t.Helper()
	cheapest := map[float64]float64{}
	bruteForceEach(t, p, func(pl *optimize.Plan) {
		if c, ok := cheapest[pl.Accuracy]; !ok || pl.TotalCost < c {
			cheapest[pl.Accuracy] = pl.TotalCost
		}
	})
	var all []point
	for a, c := range cheapest {
		all = append(all, point{a, c})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].acc > all[j].acc })
	return all
}

// bestWithin is the brute-force answer to a budget: the highest accuracy
// with a plan within it, and that accuracy's cheapest cost.
func bestWithin(all []point, budget float64) (point, bool) {
	for _, x := range all {
		if x.cost <= budget+1e-9 {
			return x, true
		}
	}
	return point{}, false
}

// refOpenFrontier is bruteFrontier of refOpen, enumerated once for the
// tests that compare with it (the enumeration is most of their time).
var refOpenFrontier struct {
	once sync.Once
	all  []point
}

// refOpenBrute is refOpen and its brute-force frontier.
func refOpenBrute(t *testing.T) (*optimize.Problem, []point) {
	t.Helper()
	p := refOpen(t)
	refOpenFrontier.once.Do(func() { refOpenFrontier.all = bruteFrontier(t, refOpen(t)) })
	if refOpenFrontier.all == nil {
		t.Fatal("the brute-force enumeration of the reference problem failed (in the test that ran it first)")
	}
	return p, refOpenFrontier.all
}

// refOpen is the reference problem without its accuracy floor, so every
// variant combination is a candidate.
func refOpen(t *testing.T) *optimize.Problem {
	p := refProblem(t)
	p.Objectives.MinAccuracy = nil
	return p
}

func TestReferenceBudgetMatchesBruteForce(t *testing.T) {
	if testing.Short() {
		t.Skip("enumerates every placement of the reference inputs")
	}
	p, all := refOpenBrute(t)
	if len(all) < 3 {
		t.Fatalf("only %d accuracy levels: the test needs a trade-off", len(all))
	}
	minCost := math.Inf(1)
	for _, x := range all {
		minCost = math.Min(minCost, x.cost)
	}
	// Budgets at, between and around every level's cheapest cost.
	budgets := []float64{minCost, minCost * 1.01, 100}
	for _, x := range all {
		budgets = append(budgets, x.cost, x.cost*0.999, x.cost*1.05)
	}
	ctx := context.Background()
	for _, b := range budgets {
		q := *p
		q.Objectives.Budget = b
		got, err := optimize.DefaultRegistry().Optimize(ctx, "auto", &q, optimize.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want, ok := bestWithin(all, b)
		if !ok {
			if got.Feasible {
				t.Errorf("budget %.4f: got a plan at %.4f, brute force has none", b, got.TotalCost)
			}
			continue
		}
		if !got.Feasible || got.GaveUp {
			t.Fatalf("budget %.4f: infeasible (%s), brute force: accuracy %.4f at %.4f", b, got.Reason, want.acc, want.cost)
		}
		if math.Abs(got.Accuracy-want.acc) > 1e-9 || math.Abs(got.TotalCost-want.cost) > 1e-9 {
			t.Errorf("budget %.4f: accuracy %.4f cost %.4f, brute force accuracy %.4f cost %.4f", b, got.Accuracy, got.TotalCost, want.acc, want.cost)
		}
		if got.TotalCost > b+1e-9 || got.Throughput < 40-1e-9 {
			t.Errorf("budget %.4f: plan costs %.4f, throughput %.4f", b, got.TotalCost, got.Throughput)
		}
	}
}

func TestReferenceFrontierMatchesBruteForce(t *testing.T) {
	if testing.Short() {
		t.Skip("enumerates every placement of the reference inputs")
	}
	p, all := refOpenBrute(t)
	// The Pareto frontier of the enumeration: most accurate first, keep a
	// level when it is cheaper than every more accurate one.
	var want []point
	for _, x := range all {
		if len(want) == 0 || x.cost < want[len(want)-1].cost-1e-9 {
			want = append(want, x)
		}
	}
	got, err := optimize.Frontier(context.Background(), p, optimize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("frontier has %d plans, brute force %d: %v", len(got), len(want), want)
	}
	for i, pl := range got {
		if !pl.Feasible || !pl.Optimal || math.Abs(pl.Accuracy-want[i].acc) > 1e-9 || math.Abs(pl.TotalCost-want[i].cost) > 1e-9 {
			t.Errorf("point %d: accuracy %.4f cost %.4f (feasible %v optimal %v), want %.4f at %.4f", i, pl.Accuracy, pl.TotalCost, pl.Feasible, pl.Optimal, want[i].acc, want[i].cost)
		}
		// Non-dominated: no enumerated plan is at least as accurate and
		// cheaper, or more accurate and no dearer.
		for _, x := range all {
			if (x.acc >= pl.Accuracy-1e-9 && x.cost < pl.TotalCost-1e-9) || (x.acc > pl.Accuracy+1e-9 && x.cost <= pl.TotalCost+1e-9) {
				t.Errorf("point %d (%.4f, %.4f) is dominated by (%.4f, %.4f)", i, pl.Accuracy, pl.TotalCost, x.acc, x.cost)
			}
		}
	}
	// The ends: the most accurate plan and the cheapest of all.
	ctx := context.Background()
	cheap, err := optimize.Exhaustive{}.Optimize(ctx, p, optimize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if last := got[len(got)-1]; math.Abs(last.TotalCost-cheap.TotalCost) > 1e-9 {
		t.Errorf("cheapest frontier point %.4f, exhaustive optimum %.4f", last.TotalCost, cheap.TotalCost)
	}
	if first := got[0]; math.Abs(first.Accuracy-all[0].acc) > 1e-9 {
		t.Errorf("most accurate frontier point %.4f, most accurate feasible plan %.4f", first.Accuracy, all[0].acc)
	}
}

func TestBudgetBelowCheapestNamesIt(t *testing.T) {
	p := refProblem(t)
	ctx := context.Background()
	cheap, err := optimize.Auto{}.Optimize(ctx, p, optimize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.Objectives.Budget = cheap.TotalCost * 0.9
	pl, err := optimize.DefaultRegistry().Optimize(ctx, "", p, optimize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if pl.Feasible || pl.Reachable == nil || pl.Reachable.MinCost == nil || math.Abs(*pl.Reachable.MinCost-cheap.TotalCost) > 1e-9 {
		t.Fatalf("feasible %v reachable %+v, want infeasible naming %.4f", pl.Feasible, pl.Reachable, cheap.TotalCost)
	}
	if !strings.Contains(pl.Reason, "cheapest plan") {
		t.Errorf("reason %q", pl.Reason)
	}
	// A strategy that only minimises cost cannot answer a budget.
	if _, err := optimize.DefaultRegistry().Optimize(ctx, "jellybean", p, optimize.Options{}); !errors.Is(err, optimize.ErrBudgetStrategy) {
		t.Errorf("jellybean with a budget: %v", err)
	}
}

// Query B planned after query A: the capacity A's plan holds is taken off,
// so B moves off A's saturated workers; with everything held, B is
// infeasible and the reason says who holds what.
func TestReservedCapacityMovesSecondQuery(t *testing.T) {
	p := refProblem(t)
	ctx := context.Background()
	a, err := optimize.Auto{}.Optimize(ctx, p, optimize.Options{})
	if err != nil || !a.Feasible {
		t.Fatalf("A: %v %+v", err, a)
	}
	res := optimize.ReservationsOf(map[string]*optimize.Plan{"qa": a})
	saturated := map[string]bool{}
	for _, r := range res {
		if r.Busy >= 1-1e-9 {
			saturated[r.Worker] = true
		}
	}
	if len(saturated) == 0 {
		t.Fatalf("A saturates no worker: %+v", res)
	}
	q := *p
	q.Reserved = res
	b, err := optimize.Auto{}.Optimize(ctx, &q, optimize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !b.Feasible {
		t.Fatalf("B infeasible: %s", b.Reason)
	}
	for _, op := range b.Operators {
		for _, w := range op.Workers {
			if saturated[w.Name] {
				t.Errorf("B puts %s on %s, which A saturates", op.Name, w.Name)
			}
			if w.Free > 0 && w.ItemsPerSec > w.Free*w.Capacity*(1+1e-9) {
				t.Errorf("B puts %.4g items/s on %s, which has %.4g left", w.ItemsPerSec, w.Name, w.Free*w.Capacity)
			}
		}
	}
	if b.TotalCost < a.TotalCost-1e-9 {
		t.Errorf("B alone costs %.4f, after A %.4f: taking capacity away cannot make it cheaper", a.TotalCost, b.TotalCost)
	}
	if sameWorkers(a, b) {
		t.Errorf("B's plan did not change after A")
	}
	// Every worker held in full: no plan, and the reason names the holders.
	var full []optimize.Reservation
	for _, w := range p.Workers {
		full = append(full, optimize.Reservation{Worker: w.Name, Busy: 1, By: []string{"qa"}})
	}
	q.Reserved = full
	c, err := optimize.Auto{}.Optimize(ctx, &q, optimize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Feasible || !strings.Contains(c.Reason, "running queries hold capacity") {
		t.Errorf("all held: feasible %v reason %q", c.Feasible, c.Reason)
	}
	// A reservation of an unknown worker is a malformed problem.
	q.Reserved = []optimize.Reservation{{Worker: "nope", Busy: 0.5}}
	_, err = optimize.Auto{}.Optimize(ctx, &q, optimize.Options{})
	if !errors.Is(err, optimize.ErrInvalidProblem) {
		t.Errorf("unknown reserved worker: %v", err)
	}
}

func sameWorkers(a, b *optimize.Plan) bool {
	key := func(p *optimize.Plan) string {
		var s []string
		for _, op := range p.Operators {
			for _, w := range op.Workers {
				s = append(s, op.Name+"@"+w.Name)
			}
		}
		sort.Strings(s)
		return strings.Join(s, ",")
	}
	return key(a) == key(b)
}
