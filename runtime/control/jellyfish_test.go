package control

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// zoo is three variants shaped like the Fashion-MNIST size family: input
// side 14, 20, 28 (float32 frames plus 400 bytes of framing), latency
// growing sub-linearly with the batch.
func zoo(maxBatch int) []JFVariant {
	var out []JFVariant
	for k, side := range []int{14, 20, 28} {
		v := JFVariant{Name: fmt.Sprintf("fit-%d", side), Side: side, Bytes: float64(side*side*4 + 400), Accuracy: []float64{0.84, 0.86, 0.87}[k]}
		for b := 1; b <= maxBatch; b++ {
			v.BatchMs = append(v.BatchMs, float64(2+2*k)+float64(b)*float64(1+k))
		}
		out = append(out, v)
	}
	return out
}

func randomProblem(rng *rand.Rand, clients, workers int) *JFProblem {
	p := &JFProblem{Variants: zoo(8), Workers: workers}
	for i := 0; i < clients; i++ {
		p.Clients = append(p.Clients, JFClient{
			Name:         fmt.Sprintf("c%d", i),
			Rate:         float64(5 + rng.IntN(150)),
			SLOMs:        float64(40 + rng.IntN(110)),
			BandwidthBps: float64(10_000 + rng.IntN(130_000)),
			RTTMs:        float64(rng.IntN(10)),
		})
	}
	return p
}

// TestScheduleIsNearExhaustive is the scheduler's "done when": on small
// random cases the annealed schedule serves as many clients as the exact
// search and its accuracy is within 3% of the exact one.
func TestScheduleIsNearExhaustive(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	worst, partial := 1.0, 0
	for c := 0; c < 80; c++ {
		p := randomProblem(rng, 2+rng.IntN(4), 1+rng.IntN(2))
		got := p.Schedule(nil, DefaultJFAnneal)
		want := p.Exhaustive()
		if got.Served != want.Served {
			t.Fatalf("case %d: serves %.2f of the clients, exhaustive %.2f\n%+v\n%+v", c, got.Served, want.Served, got, want)
		}
		if want.Served < 1 {
			partial++
		}
		if want.Accuracy > 0 {
			r := got.Accuracy / want.Accuracy
			worst = min(worst, r)
			if r < 0.97 {
				t.Errorf("case %d: accuracy %.4f, exhaustive %.4f (%.1f%%)", c, got.Accuracy, want.Accuracy, 100*r)
			}
		}
		checkSchedule(t, p, got)
	}
	t.Logf("worst accuracy ratio to exhaustive: %.4f; %d cases where not every client can be served", worst, partial)
}

// checkSchedule verifies a schedule's own promises: every served client
// fits its budget at its worker's batch size, and no worker is given more
// rate than its batch size carries.
func checkSchedule(t *testing.T, p *JFProblem, s *JFSchedule) {
	t.Helper()
	for w, wk := range s.Workers {
		v := p.Variants[wk.Variant]
		var rate float64
		for _, i := range wk.Clients {
			if s.Client[i] != w {
				t.Fatalf("client %d listed by worker %d but mapped to %d", i, w, s.Client[i])
			}
			if 2*v.BatchMs[wk.Batch-1] > p.BudgetMs(i, wk.Variant) {
				t.Fatalf("client %d on %s at batch %d: 2 x %.1f ms over its budget %.1f ms", i, v.Name, wk.Batch, v.BatchMs[wk.Batch-1], p.BudgetMs(i, wk.Variant))
			}
			rate += p.Clients[i].Rate
		}
		if len(wk.Clients) > 0 && rate > v.Throughput(wk.Batch)+1e-9 {
			t.Fatalf("worker %d: %.1f req/s over %s's %.1f at batch %d", w, rate, v.Name, v.Throughput(wk.Batch), wk.Batch)
		}
	}
}

// TestScheduleFollowsTheBandwidth: one client, one worker, SLO 100 ms:
// at 800 kbit/s the full-size variant fits, at 300 kbit/s only a smaller
// input (fewer bytes on the link) leaves compute time, and at 30 kbit/s
// nothing does (the client is not served: it will miss).
func TestScheduleFollowsTheBandwidth(t *testing.T) {
	for _, tc := range []struct {
		kbit float64
		want string
	}{{800, "fit-28"}, {300, "fit-20"}, {150, "fit-14"}, {30, ""}} {
		p := &JFProblem{Variants: zoo(8), Workers: 1, Clients: []JFClient{{Rate: 15, SLOMs: 100, BandwidthBps: tc.kbit * 1000 / 8}}}
		s := p.Schedule(nil, DefaultJFAnneal)
		got := ""
		if j := s.Variant(0); j >= 0 {
			got = p.Variants[j].Name
		}
		if got != tc.want {
			t.Errorf("%v kbit/s: %q, want %q (%+v)", tc.kbit, got, tc.want, s)
		}
	}
}

// TestFindClientsPaperExample is Fig. 8's shape: at batch 3 the variant
// meets three clients' budgets at 80 req/s, at batch 2 all five at 60;
// the best is 60 req/s at batch 2 with the two tight clients in.
func TestFindClientsPaperExample(t *testing.T) {
	v := JFVariant{Name: "m", Bytes: 0, Accuracy: 1, BatchMs: []float64{1000.0 / 40, 2000.0 / 60, 3000.0 / 80}}
	// Budgets: 2 l(3) = 75 ms for c0..c2, 2 l(2) = 66.7 ms for c3, c4.
	p := &JFProblem{Variants: []JFVariant{v}, Workers: 1}
	for _, c := range []struct{ rate, slo float64 }{{20, 80}, {10, 80}, {10, 80}, {10, 70}, {20, 70}} {
		p.Clients = append(p.Clients, JFClient{Rate: c.rate, SLOMs: c.slo, BandwidthBps: 1e12})
	}
	got, b := p.findClients(0, []int{0, 1, 2, 3, 4})
	if fmt.Sprint(got) != "[0 1 2 4]" && fmt.Sprint(got) != "[0 1 3 4]" && fmt.Sprint(got) != "[0 2 3 4]" || b != 2 {
		t.Fatalf("clients %v at batch %d; want 60 req/s at batch 2", got, b)
	}
}

// BenchmarkSchedule8Clients: the scheduler runs every half second, so it
// must take well under that for 8 clients (the issue asks < 100 ms).
func BenchmarkSchedule8Clients(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 3))
	p := randomProblem(rng, 8, 3)
	p.Variants = zoo(64)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.Schedule(nil, DefaultJFAnneal)
	}
}

// BenchmarkSchedule8ClientsFastModels: models of tens of microseconds
// (the Fashion-MNIST size family) have throughputs of a million rows a
// second; the DP's table must be sized by the clients' rates, not by that.
func BenchmarkSchedule8ClientsFastModels(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 3))
	p := randomProblem(rng, 8, 2)
	for j := range p.Variants {
		for k := range p.Variants[j].BatchMs {
			p.Variants[j].BatchMs[k] /= 500
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.Schedule(nil, DefaultJFAnneal)
	}
}
