package sched_test

import (
	"slices"
	"testing"
	"time"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/runtime/inference/sched"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// fast is good on class 0 and poor on class 1; slow is good on both (the
// window of runtime/dataaware's scheduler tests, on the worker).
var (
	fastRecall = []float64{0.98, 0.42}
	slowRecall = []float64{0.80, 0.99}
)

func variants() []sched.Variant {
	return []sched.Variant{
		{Name: "fast", Key: "fast@cpu", Accuracy: 0.70, Recall: fastRecall},
		{Name: "slow", Key: "slow@cpu", Accuracy: 0.90, Recall: slowRecall},
	}
}

// profiles: fast takes 1 ms + 0.1 ms a row, slow 4 ms + 0.2 ms a row.
func profiles() *sched.Profiles {
	p := sched.NewProfiles()
	for _, n := range []int{1, 32} {
		p.Observe("fast@cpu", n, time.Duration(1e6+1e5*n))
		p.Observe("slow@cpu", n, time.Duration(4e6+2e5*n))
	}
	return p
}

// simulate runs policy over two queries' batches that arrive together
// (query a's rows class 0, b's class 1, two batches of 2 rows each, LATENCY
// 12 ms), one batch at a time on a clock advanced by the profiles, and
// returns the variant each batch ran on (by query) and the deadline misses.
func simulate(t *testing.T, pol sched.Policy) (map[string][]string, int) {
	t.Helper()
	now := time.Unix(1000, 0)
	prof := profiles()
	vs := variants()
	var queues []*sched.Queue
	for q, class := range map[string]int{"a": 0, "b": 1} {
		tn := sched.Tenant{Query: q, Latency: 12 * time.Millisecond, Variants: vs}
		qu := &sched.Queue{Tenant: tn}
		for k := 0; k < 2; k++ {
			votes := make([]float64, 2)
			votes[class] = 5
			qu.Pending = append(qu.Pending, &sched.Request{Query: q, Key: "slow@cpu", Rows: 2, Total: 2, Arrival: now,
				Deadline: now.Add(tn.Latency + time.Duration(k)*time.Microsecond), Votes: [][]float64{votes, votes}, Variant: -1})
		}
		queues = append(queues, qu)
	}
	slices.SortFunc(queues, func(x, y *sched.Queue) int { return len(x.Query) - len(y.Query) + int(x.Query[0]) - int(y.Query[0]) })
	ran := map[string][]string{}
	misses := 0
	clock := now
	for {
		v := &sched.View{Now: clock, Profiles: prof, Arrivals: sched.NewArrivals()}
		for _, q := range queues {
			if len(q.Pending) > 0 {
				v.Queues = append(v.Queues, q)
				v.Tenants = append(v.Tenants, q.Tenant)
			}
		}
		if len(v.Queues) == 0 {
			return ran, misses
		}
		d := pol.Next(v)
		if d.Run == nil {
			t.Fatalf("%s ran nothing with %d queues waiting: %s", pol.Name(), len(v.Queues), d.Why)
		}
		key := d.Run.Key
		for _, vr := range vs {
			if vr.Name == d.Variant {
				key = vr.Key
			}
		}
		took, _ := prof.Predict(key, d.Run.Rows)
		clock = clock.Add(took)
		if clock.After(d.Run.Deadline) {
			misses += d.Run.Rows
		}
		ran[d.Run.Query] = append(ran[d.Run.Query], d.Variant)
		for _, q := range queues {
			if q.Query == d.Run.Query {
				q.Pending = slices.DeleteFunc(q.Pending, func(r *sched.Request) bool { return r == d.Run })
			}
		}
	}
}

// TestSneakPeekPicksVariantPerGroup: on the worker, SneakPeek runs query
// a's class-0 rows on the fast variant (as accurate there) and b's class-1
// rows on the slow one, and meets every deadline; MaxAcc-EDF runs
// everything on the slow variant and misses.
func TestSneakPeekPicksVariantPerGroup(t *testing.T) {
	sp, err := sched.ByName(sched.SneakPeekName)
	if err != nil {
		t.Fatal(err)
	}
	ran, misses := simulate(t, sp)
	if misses != 0 || !slices.Equal(ran["a"], []string{"fast", "fast"}) || !slices.Equal(ran["b"], []string{"slow", "slow"}) {
		t.Fatalf("sneakpeek ran %v with %d rows late: want a on fast, b on slow, none late", ran, misses)
	}
	mx, err := sched.ByName(sched.MaxAccEDFName)
	if err != nil {
		t.Fatal(err)
	}
	ran, mxMisses := simulate(t, mx)
	for q, vs := range ran {
		for _, v := range vs {
			if v != "slow" {
				t.Fatalf("maxacc-edf ran %s on %s", q, v)
			}
		}
	}
	if mxMisses == 0 {
		t.Fatalf("maxacc-edf ran %v and met every deadline: the window is not tight", ran)
	}
}

// TestDataAwareRunsChosenVariant: a batch bound to logreg runs on the cnn
// when the sneakpeek policy chooses it (both make the deadline, the cnn is
// the more accurate on the batch's class), through ONNX Runtime: the probs
// are the cnn's (its embedding, which logreg lacks, goes to scratch); the
// mlp-large, whose embedding is wider than the bound session's outputs
// allow for cnn-bound batches, is no candidate for those.
func TestDataAwareRunsChosenVariant(t *testing.T) {
	env, err := onnx.Open("")
	if err != nil {
		t.Fatalf("ONNX Runtime: %v", err)
	}
	open := func(file string) ml.Session {
		s, err := env.Session("../../../examples/fashion/models/"+file, onnx.Options{Device: onnx.CPU, IntraOpThreads: 1})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	logreg, cnnS, large := open("logreg.onnx"), open("cnn.onnx"), open("mlp-large.onnx")
	if sched.Compatible(cnnS.Outputs(), large) || !sched.Compatible(logreg.Outputs(), cnnS) {
		t.Fatalf("compatibility: cnn outputs %v, mlp-large %v, logreg %v", cnnS.Outputs(), large.Outputs(), logreg.Outputs())
	}
	pol, _ := sched.ByName(sched.SneakPeekName)
	s := sched.New(pol)
	defer s.Close()
	for _, n := range []int{1, 32} {
		s.Profiles().Observe("cnn", n, time.Millisecond)
		s.Profiles().Observe("logreg", n, time.Microsecond)
	}
	evidence := 0
	tn := sched.Tenant{Query: "q", Latency: time.Minute,
		Variants: []sched.Variant{
			{Name: "logreg", Key: "logreg", Session: logreg, Accuracy: 0.84, Recall: []float64{0.96, 0.70}},
			{Name: "cnn", Key: "cnn", Session: cnnS, Accuracy: 0.90, Recall: []float64{0.98, 0.86}},
		},
		Evidence: func(in []ml.Tensor, row int) []float64 { evidence++; return []float64{0, 5} },
	}
	b := s.Bind(logreg, "logreg", tn)
	in := []ml.Tensor{images(4)}
	got := outputs(logreg, 4)
	if err := b.Run(in, got); err != nil {
		t.Fatal(err)
	}
	want := outputs(cnnS, 4)
	if err := cnnS.Run(in, want); err != nil {
		t.Fatal(err)
	}
	direct := outputs(logreg, 4)
	if err := logreg.Run(in, direct); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got[0].F32, want[0].F32) || slices.Equal(got[0].F32, direct[0].F32) {
		t.Fatalf("bound logreg batch gave %v, want the cnn's %v (logreg's %v)", got[0].F32[:10], want[0].F32[:10], direct[0].F32[:10])
	}
	if evidence != 4 {
		t.Fatalf("evidence read for %d rows, want 4", evidence)
	}
}

// TestByNameKnowsSneakPeekPolicies: --sched takes the four SneakPeek
// schedulers by name.
func TestByNameKnowsSneakPeekPolicies(t *testing.T) {
	for _, n := range []string{sched.MaxAccEDFName, sched.LOEDFName, sched.GroupedName, sched.SneakPeekName} {
		p, err := sched.ByName(n)
		if err != nil || p.Name() != n {
			t.Fatalf("ByName(%q) = %v, %v", n, p, err)
		}
	}
}
