package sched_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/runtime/inference/sched"
	"github.com/tierflow/tierflow/runtime/onnx"
)

const cnnFile = "../../../examples/fashion/models/cnn.onnx"

// cnn opens the project's Fashion-MNIST CNN ([N,1,28,28] -> 10 classes) in
// ONNX Runtime.
func cnn(t testing.TB) ml.Session {
	t.Helper()
	env, err := onnx.Open("")
	if err != nil {
		t.Fatalf("ONNX Runtime: %v", err)
	}
	s, err := env.Session(cnnFile, onnx.Options{Device: onnx.CPU, IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// images is n deterministic 28x28 inputs.
func images(n int) ml.Tensor {
	x := make([]float32, n*28*28)
	for i := range x {
		x[i] = float32(math.Abs(math.Sin(float64(i) * 0.37)))
	}
	return ml.Tensor{DType: ml.Float32, Shape: []int64{int64(n), 1, 28, 28}, F32: x}
}

// outputs are caller buffers for n rows of sess's outputs.
func outputs(sess ml.Session, n int) []ml.Tensor {
	var out []ml.Tensor
	for _, o := range sess.Outputs() {
		shape := slices.Clone(o.Shape)
		shape[0] = int64(n)
		per := 1
		for _, d := range shape[1:] {
			per *= int(d)
		}
		out = append(out, ml.Tensor{DType: ml.Float32, Shape: shape, F32: make([]float32, n*per)})
	}
	return out
}

// recorder runs the real session and records each run's rows and query;
// with gate set, each run first waits for a token.
type recorder struct {
	ml.Session
	mu     sync.Mutex
	runs   []string
	rows   []int
	gate   chan struct{}
	query  string
	parent *recorder
}

func (r *recorder) as(q string) *recorder {
	return &recorder{Session: r.Session, gate: r.gate, query: q, parent: r}
}

func (r *recorder) Run(in, out []ml.Tensor) error {
	p := r
	if r.parent != nil {
		p = r.parent
	}
	if p.gate != nil {
		<-p.gate
	}
	p.mu.Lock()
	p.runs = append(p.runs, r.query)
	p.rows = append(p.rows, int(in[0].Shape[0]))
	p.mu.Unlock()
	return r.Session.Run(in, out)
}

func (r *recorder) log() ([]string, []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.runs), slices.Clone(r.rows)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Two queries calling one variant share one session: it opens once, both
// are its users, and each query's runs through the scheduler give what the
// session gives alone.
func TestOneSessionPerVariantAcrossQueries(t *testing.T) {
	for _, p := range []sched.Policy{sched.Naive{}, sched.NewDeepQuery()} {
		s := sched.New(p)
		var opened atomic.Int32
		open := func() (ml.Session, error) { opened.Add(1); return cnn(t), nil }
		key := sched.Key(cnnFile, "cpu")
		a, err := s.Session(key, "rt", open)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.Session(key, "be", open)
		if err != nil {
			t.Fatal(err)
		}
		if a != b || opened.Load() != 1 || s.Sessions() != 1 || !slices.Equal(s.Users(key), []string{"be", "rt"}) {
			t.Fatalf("%s: opened %d, sessions %d, users %v, same %v", p.Name(), opened.Load(), s.Sessions(), s.Users(key), a == b)
		}
		raw := cnn(t)
		want := outputs(raw, 8)
		if err := raw.Run([]ml.Tensor{images(8)}, want); err != nil {
			t.Fatal(err)
		}
		rt := s.Bind(a, key, sched.Tenant{Query: "rt", Priority: sched.RealTime, Latency: 50 * time.Millisecond})
		be := s.Bind(a, key, sched.Tenant{Query: "be", Priority: sched.BestEffort})
		var wg sync.WaitGroup
		errs := make([]error, 2)
		got := [][]ml.Tensor{outputs(raw, 8), outputs(raw, 8)}
		for i, bs := range []ml.Session{rt, be} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					if err := bs.Run([]ml.Tensor{images(8)}, got[i]); err != nil {
						errs[i] = err
						return
					}
				}
			}()
		}
		wg.Wait()
		for i := range got {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if !slices.Equal(got[i][0].F32, want[0].F32) {
				t.Fatalf("%s: query %d's outputs differ from the session's", p.Name(), i)
			}
		}
		st := s.Stats()
		if len(st) != 2 || st[0].Rows != 40 || st[1].Rows != 40 || st[0].Busy <= 0 {
			t.Fatalf("%s: stats %+v", p.Name(), st)
		}
	}
}

// While a best-effort batch runs, a second best-effort batch and then a
// real-time one arrive: DeepQuery starts the real-time one at once (it never
// waits for best-effort work) and holds the second best-effort one until the
// device is idle; the naive policy starts everything as it comes.
func TestRealTimeRunsBeforeWaitingBestEffort(t *testing.T) {
	for _, p := range []sched.Policy{sched.NewDeepQuery(), sched.Naive{}} {
		s := sched.New(p)
		rec := &recorder{Session: cnn(t), gate: make(chan struct{})}
		key := sched.Key(cnnFile, "cpu")
		be := s.Bind(rec.as("be"), key, sched.Tenant{Query: "be", Priority: sched.BestEffort})
		rt := s.Bind(rec.as("rt"), key, sched.Tenant{Query: "rt", Priority: sched.RealTime, Latency: time.Second})
		var wg sync.WaitGroup
		run := func(x ml.Session, n int) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := x.Run([]ml.Tensor{images(n)}, outputs(x, n)); err != nil {
					t.Error(err)
				}
			}()
		}
		run(be, 4) // granted at once: the device is idle
		waitFor(t, "the first batch to start", func() bool { return busy(s) })
		run(be, 4)
		waitFor(t, "the second best-effort batch to queue", func() bool { return queued(s) == 2 })
		run(rt, 1)
		waitFor(t, "the real-time batch to queue", func() bool { return queued(s) == 3 })
		want := 2 // the first best-effort batch and the real-time one
		if p.Name() == sched.NaiveName {
			want = 3
		}
		waitFor(t, fmt.Sprintf("%s to start %d batches", p.Name(), want), func() bool { return sched.RunningBatches(s) == want })
		if p.Name() == sched.DeepQueryName && !strings.Contains(s.Why(), "best-effort be waits") {
			t.Fatalf("the second best-effort batch waits for no reason: %q", s.Why())
		}
		for range 3 {
			rec.gate <- struct{}{}
		}
		wg.Wait()
		if got, _ := rec.log(); p.Name() == sched.DeepQueryName && got[2] != "be" {
			t.Fatalf("deepquery ran %v, want the second best-effort batch last", got)
		}
	}
}

// busy: a batch holds the slot.
func busy(s *sched.Scheduler) bool { return sched.RunningBatches(s) > 0 }

// queued: requests waiting or running.
func queued(s *sched.Scheduler) int { return sched.Requests(s) }

// A best-effort batch is cut to the rows the profile says end before the
// next real-time batch is due, waits when none fit, and runs whole when no
// real-time query is active; the parts give the whole batch's outputs.
func TestBestEffortSizedToPredictedRealTime(t *testing.T) {
	p := sched.NewDeepQuery()
	p.Sizes = nil // the profile is set below
	p.Margin, p.MarginShare = 0, 0.1
	s := sched.New(p)
	now := time.Unix(1000, 0)
	var clock sync.Mutex
	sched.SetClock(s, func() time.Time { clock.Lock(); defer clock.Unlock(); return now })
	// The clock stands still, so the runs are timed by it too: a real
	// row, far faster than the 1 ms profiled below, at a tenth of it. (On
	// the wall clock a loaded machine's slow runs raised the profile until
	// no row fitted the gap the still clock never closes, and the test
	// waited for good.)
	sched.SetTook(s, func(rows int) time.Duration { return time.Duration(rows) * 100 * time.Microsecond })
	key := sched.Key(cnnFile, "cpu")
	rec := &recorder{Session: cnn(t)}
	// 1 ms a row.
	for _, b := range []int{1, 8, 64} {
		s.Profiles().Observe(key, b, time.Duration(b)*time.Millisecond)
	}
	if d, _ := s.Profiles().Predict(key, 12); d != 12*time.Millisecond {
		t.Fatalf("interpolated 12 rows: %s, want 12ms", d)
	}
	// A real-time query whose frames came at 20 ms intervals, the last 3
	// ms ago: the next is due in 17 ms, less the 2 ms margin: 15 ms.
	s.Bind(rec.as("rt"), key, sched.Tenant{Query: "rt", Priority: sched.RealTime, Latency: 50 * time.Millisecond})
	s.Arrivals().Observe("rt", now.Add(-23*time.Millisecond), 1)
	s.Arrivals().Observe("rt", now.Add(-3*time.Millisecond), 1)
	be := s.Bind(rec.as("be"), key, sched.Tenant{Query: "be", Priority: sched.BestEffort})
	want := outputs(rec, 64)
	if err := rec.Session.Run([]ml.Tensor{images(64)}, want); err != nil {
		t.Fatal(err)
	}
	got := outputs(rec, 64)
	// The first part is 15 rows; the real runs then refine the profile (a
	// real row is far faster than 1 ms), so later parts grow, and all the
	// parts run before the real-time query counts as paused (the clock
	// stands still).
	if err := be.Run([]ml.Tensor{images(64)}, got); err != nil {
		t.Fatal(err)
	}
	_, rows := rec.log()
	if len(rows) < 2 || rows[0] != 15 || sum(rows) != 64 {
		t.Fatalf("best-effort parts %v, want the first of 15 rows and 64 in all", rows)
	}
	for i := range want[0].F32 {
		if math.Abs(float64(want[0].F32[i]-got[0].F32[i])) > 1e-5 {
			t.Fatalf("output %d: %v in parts, %v whole", i, got[0].F32[i], want[0].F32[i])
		}
	}
	// Due in 1 ms: not one row fits, the batch waits until the real-time
	// batch arrives (which runs first), then fits in the new gap.
	clock.Lock()
	now = now.Add(16 * time.Millisecond)
	clock.Unlock()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := be.Run([]ml.Tensor{images(4)}, outputs(rec, 4)); err != nil {
			t.Error(err)
		}
	}()
	waitFor(t, "the best-effort batch to wait", func() bool { return s.Why() != "" })
	if n := len(first(rec.log())); n != len(rows) {
		t.Fatalf("a best-effort part ran with 1 ms left")
	}
	if err := s.Bind(rec.as("rt"), key, sched.Tenant{Query: "rt", Priority: sched.RealTime, Latency: 50 * time.Millisecond}).
		Run([]ml.Tensor{images(1)}, outputs(rec, 1)); err != nil {
		t.Fatal(err)
	}
	s.Delivered("rt") // its rows reached the sink (the worker's latency hook)
	wg.Wait()
	runs, _ := rec.log()
	if tail := runs[len(rows):]; !slices.Equal(tail, []string{"rt", "be"}) {
		t.Fatalf("after the wait ran %v, want [rt be]", tail)
	}
}

func first(a []string, _ []int) []string { return a }

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// Profiles interpolate between measured sizes, extrapolate by rows, and
// follow new measurements by an EWMA; Measure times a real session.
func TestProfiles(t *testing.T) {
	p := sched.NewProfiles()
	if _, ok := p.Predict("k", 4); ok {
		t.Fatal("a prediction without measurements")
	}
	p.Observe("k", 2, 2*time.Millisecond)
	p.Observe("k", 10, 6*time.Millisecond)
	for _, c := range []struct {
		rows int
		want time.Duration
	}{{2, 2 * time.Millisecond}, {6, 4 * time.Millisecond}, {20, 12 * time.Millisecond}, {1, time.Millisecond}} {
		if d, _ := p.Predict("k", c.rows); d != c.want {
			t.Errorf("predict %d rows: %s, want %s", c.rows, d, c.want)
		}
	}
	p.Observe("k", 2, 7*time.Millisecond) // 0.8*2 + 0.2*7 = 3
	if d, _ := p.Predict("k", 2); d != 3*time.Millisecond {
		t.Errorf("after a slow run: %s, want 3ms", d)
	}
	if n := p.Largest("k", 100, 6*time.Millisecond, 0); n != 10 {
		t.Errorf("largest within 6ms: %d, want 10", n)
	}
	if err := p.Measure("cnn", cnn(t), []int{1, 16}); err != nil {
		t.Fatal(err)
	}
	if got := p.Sizes("cnn"); !slices.Equal(got, []int{1, 16}) {
		t.Fatalf("measured sizes %v", got)
	}
	if d, ok := p.Predict("cnn", 8); !ok || d <= 0 {
		t.Fatalf("predict 8 rows of cnn: %s %v", d, ok)
	}
}

// The arrival predictor follows a periodic stream.
func TestArrivalsPredictPeriod(t *testing.T) {
	a := sched.NewArrivals()
	t0 := time.Unix(0, 0)
	for i := range 10 {
		a.Observe("q", t0.Add(time.Duration(i)*25*time.Millisecond), 2)
	}
	p, ok := a.Predict("q")
	if !ok || p.Period != 25*time.Millisecond || !p.Next.Equal(t0.Add(250*time.Millisecond)) || p.Rows != 2 {
		t.Fatalf("prediction %+v %v", p, ok)
	}
}

// A measured profile keeps its shape and is corrected by one factor, the
// EWMA of the log of measured over predicted time, learnt from a run at any
// size; a fit with spread allows for how far runs stray from it.
func TestMeasuredProfileCorrectedByLogRatio(t *testing.T) {
	p := sched.NewProfiles()
	if err := p.Measure("cnn", cnn(t), []int{1, 8, 64}); err != nil {
		t.Fatal(err)
	}
	d8, _ := p.Predict("cnn", 8)
	d64, _ := p.Predict("cnn", 64)
	if d64 < d8 {
		t.Fatalf("measured profile not monotone: 8 rows %s, 64 rows %s", d8, d64)
	}
	p.Observe("cnn", 8, 2*d8) // twice as slow as predicted
	want := math.Exp(0.2 * math.Log(2))
	if got := p.Scale("cnn"); math.Abs(got-want) > 1e-9 {
		t.Fatalf("scale %v, want %v", got, want)
	}
	// The correction learnt at 8 rows holds at 64.
	if got, _ := p.Predict("cnn", 64); math.Abs(float64(got)/float64(d64)-want) > 1e-3 {
		t.Fatalf("64 rows: %s, want %s x %v", got, d64, want)
	}
	p.Observe("cnn", 8, d8/4) // and then far faster: the runs stray
	budget, _ := p.Predict("cnn", 32)
	if mean, wide := p.Largest("cnn", 64, budget, 0), p.Largest("cnn", 64, budget, 2); mean < 31 || wide >= mean {
		t.Fatalf("within the prediction for 32 rows: %d rows by the mean, %d with two deviations to spare", mean, wide)
	}
}

// The conservative correction is the quantile of the recent runs over the
// mean one: 1 until MinRecent runs, then how much slower the slow runs are.
func TestConservativeQuantileOfRecentRuns(t *testing.T) {
	p := sched.NewProfiles()
	if err := p.Measure("cnn", cnn(t), []int{1, 8}); err != nil {
		t.Fatal(err)
	}
	raw, _ := p.Predict("cnn", 8) // before any correction
	for i := range sched.MinRecent - 1 {
		_ = i
		p.Observe("cnn", 8, raw)
	}
	if c := p.Conservative("cnn", 0.9); c != 1 {
		t.Fatalf("with %d runs: %v, want 1", sched.MinRecent-1, c)
	}
	for range 16 - (sched.MinRecent - 1) {
		p.Observe("cnn", 8, raw)
	}
	for range 4 {
		p.Observe("cnn", 8, 3*raw) // one run in five is three times slower
	}
	want := 3 / p.Scale("cnn")
	if got := p.Conservative("cnn", 0.9); math.Abs(got-want) > 1e-4*want { // durations round to nanoseconds
		t.Fatalf("p90 of 16 on time and 4 three times slower: %v, want %v", got, want)
	}
	if got := p.Conservative("cnn", 0.5); got != 1 {
		t.Fatalf("median: %v, want 1 (no slower than the mean correction)", got)
	}
	// Sized by p90, a part fits fewer rows in one budget than by the mean.
	budget, _ := p.Predict("cnn", 32)
	mean := p.Largest("cnn", 64, budget, 0)
	cons := p.Largest("cnn", 64, time.Duration(float64(budget)/p.Conservative("cnn", 0.9)), 0)
	if cons >= mean {
		t.Fatalf("rows within the budget: %d by p90, %d by the mean", cons, mean)
	}
}

// A real-time batch that arrives while a best-effort part runs teaches
// DeepQuery a margin: the time the two shared the device is kept free
// before the next predicted real-time batch, and shrinks as parts end in
// time.
func TestDeepQueryLearnsMarginFromOverrun(t *testing.T) {
	p := sched.NewDeepQuery()
	p.Sizes = nil
	s := sched.New(p)
	now := time.Unix(1000, 0)
	var clock sync.Mutex
	at := func(d time.Duration) { clock.Lock(); now = time.Unix(1000, 0).Add(d); clock.Unlock() }
	sched.SetClock(s, func() time.Time { clock.Lock(); defer clock.Unlock(); return now })
	key := sched.Key(cnnFile, "cpu")
	rec := &recorder{Session: cnn(t), gate: make(chan struct{}, 16)}
	for _, b := range []int{1, 8, 64} {
		s.Profiles().Observe(key, b, time.Duration(b)*time.Millisecond)
	}
	rtT := sched.Tenant{Query: "rt", Priority: sched.RealTime, Latency: 50 * time.Millisecond}
	rt := s.Bind(rec.as("rt"), key, rtT)
	s.Arrivals().Observe("rt", now.Add(-23*time.Millisecond), 1)
	s.Arrivals().Observe("rt", now.Add(-3*time.Millisecond), 1)
	be := s.Bind(rec.as("be"), key, sched.Tenant{Query: "be", Priority: sched.BestEffort})
	view := func() *sched.View {
		clock.Lock()
		defer clock.Unlock()
		return &sched.View{Now: now, Arrivals: s.Arrivals(), Profiles: s.Profiles(), Tenants: []sched.Tenant{rtT}}
	}

	var wg sync.WaitGroup
	run := func(sess ml.Session, n int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sess.Run([]ml.Tensor{images(n)}, outputs(rec, n)); err != nil {
				t.Error(err)
			}
		}()
	}
	run(be, 4) // 4 ms predicted, 15 ms free: granted whole, held at the gate
	waitFor(t, "the best-effort part to start", func() bool { return sched.RunningBatches(s) == 1 })
	at(10 * time.Millisecond)
	run(rt, 1) // arrives 10 ms in, while the part still runs
	waitFor(t, "the real-time batch to start beside it", func() bool { return sched.RunningBatches(s) == 2 })
	at(14 * time.Millisecond)
	for range 16 {
		rec.gate <- struct{}{}
	}
	wg.Wait()
	if got := p.Learned(); got != 2*time.Millisecond {
		t.Fatalf("learned margin %s, want 2ms (halfway to the 4 ms the part ended after the real-time batch came)", got)
	}
	if ov := p.Overruns(); ov.Parts != 1 || ov.Overran != 1 || ov.Worst != 4*time.Millisecond {
		t.Fatalf("overruns %+v, want 1 part, 1 overran by 4ms", ov)
	}
	fresh, _, _ := sched.NewDeepQuery().Budget(view())
	if got, _, _ := p.Budget(view()); got != fresh-2*time.Millisecond {
		t.Fatalf("budget %s after the overrun, %s without it: want 2 ms less", got, fresh)
	}
	p.Observe(sched.Outcome{Query: "be", Priority: sched.BestEffort, Ended: now}) // a part in time
	if got := p.Learned(); got != time.Duration(0.9*float64(2*time.Millisecond)) {
		t.Fatalf("after a part in time: %s, want 1.8ms", got)
	}
	// A whole period's overlap is capped at LearnShare of the period.
	for range 20 {
		p.Observe(sched.Outcome{Query: "be", Priority: sched.BestEffort, RealTimeArrived: now, Ended: now.Add(time.Second)})
	}
	if got, _, _ := p.Budget(view()); got < fresh-time.Duration(p.LearnShare*float64(20*time.Millisecond)) {
		t.Fatalf("budget %s after overlaps of a second, %s without: want at most a quarter period less", got, fresh)
	}
}

// Runs of one session at sizes far apart stray from its measured profile
// differently (a real-time query's one-row runs, a best-effort query's
// parts): each band of sizes with MinBandRuns runs is corrected by its own
// EWMA, a size never run by the nearest band's, a key without band runs by
// the key's one factor.
func TestMeasuredProfileCorrectedPerBand(t *testing.T) {
	p := sched.NewProfiles()
	if err := p.Measure("cnn", cnn(t), []int{1, 8, 16, 64}); err != nil {
		t.Fatal(err)
	}
	raw := map[int]time.Duration{}
	for _, n := range []int{1, 12, 40, 64} {
		raw[n], _ = p.Predict("cnn", n)
	}
	for range 20 {
		p.Observe("cnn", 1, raw[1]/4)   // one-row runs four times faster
		p.Observe("cnn", 12, 2*raw[12]) // 12-row parts twice as slow
	}
	near := func(what string, got, want time.Duration) {
		t.Helper()
		if r := float64(got) / float64(want); r < 0.95 || r > 1.05 {
			t.Errorf("%s: %s, want %s", what, got, want)
		}
	}
	got1, _ := p.Predict("cnn", 1)
	near("one row", got1, raw[1]/4)
	got12, _ := p.Predict("cnn", 12)
	near("12 rows", got12, 2*raw[12])
	// 40 rows (band 32-63) never ran: the nearest band run, 8-15's.
	got40, _ := p.Predict("cnn", 40)
	near("40 rows", got40, 2*raw[40])
	// The key's one factor is between the two, what the parts were sized
	// by before: a fifth and more too fast.
	if s := p.Scale("cnn"); s > 0.8 || s < 0.5 {
		t.Errorf("key's factor %v, want between 1/4 and 2 (the mix)", s)
	}
	if sched.Band(1) != 0 || sched.Band(12) != 3 || sched.Band(16) != 4 || sched.Band(63) != 5 {
		t.Errorf("bands 1, 12, 16, 63: %d %d %d %d", sched.Band(1), sched.Band(12), sched.Band(16), sched.Band(63))
	}
}

// A best-effort part ends, by its band's corrected profile, before the
// predicted real-time arrival less the guard (Margin), and the trace says
// so: the part's predicted end, the arrival it was sized to (Due), and its
// run on the caller's goroutine.
func TestBestEffortPartEndsBeforeGuard(t *testing.T) {
	p := sched.NewDeepQuery()
	p.Sizes = []int{1, 8, 16, 64}
	p.Learn = false
	p.Margin, p.MarginShare = 10*time.Millisecond, 0
	s := sched.New(p)
	t0 := time.Unix(1000, 0)
	now := t0
	var clock sync.Mutex
	sched.SetClock(s, func() time.Time { clock.Lock(); defer clock.Unlock(); return now })
	var parts []sched.Part
	var pmu sync.Mutex
	s.Trace(func(x sched.Part) { pmu.Lock(); parts = append(parts, x); pmu.Unlock() })
	key := sched.Key(cnnFile, "cpu")
	rec := &recorder{Session: cnn(t)}
	if _, err := s.Session(key, "be", func() (ml.Session, error) { return rec, nil }); err != nil {
		t.Fatal(err)
	}
	// A profile that grows with rows (a measured one may be flat from 8 to
	// 16 rows on a loaded machine, and then 16 rows fit as well as 12).
	sched.SetMeasured(s.Profiles(), key, map[int]time.Duration{1: 100 * time.Microsecond, 8: 400 * time.Microsecond,
		16: 800 * time.Microsecond, 64: 3 * time.Millisecond})
	raw12, _ := s.Profiles().Predict(key, 12)
	for range 20 {
		s.Profiles().Observe(key, 1, raw12/40) // real-time rows run fast
		s.Profiles().Observe(key, 12, 2*raw12) // parts of 8-15 rows slow
	}
	budget := 2 * raw12 // what 12 rows take now (the key's one factor says far less)
	rtT := sched.Tenant{Query: "rt", Priority: sched.RealTime, Latency: 50 * time.Millisecond}
	s.Bind(rec.as("rt"), key, rtT)
	// Frames a second apart; the next is due in budget plus the guard.
	period := time.Second
	last := now.Add(budget + p.Margin - period)
	s.Arrivals().Observe("rt", last.Add(-period), 1)
	s.Arrivals().Observe("rt", last, 1)
	be := s.Bind(rec.as("be"), key, sched.Tenant{Query: "be", Priority: sched.BestEffort})
	if err := be.Run([]ml.Tensor{images(64)}, outputs(rec, 64)); err != nil {
		t.Fatal(err)
	}
	pmu.Lock()
	defer pmu.Unlock()
	if len(parts) < 2 {
		t.Fatalf("parts %+v: want the batch in parts", parts)
	}
	first := parts[0]
	due := last.Add(period)
	if first.Rows != 12 || !first.Due.Equal(due) || first.PredictedEnd.After(due.Add(-p.Margin)) {
		t.Fatalf("first part: %d rows, predicted end %s, due %s: want 12 rows ending by %s (the guard before the arrival)",
			first.Rows, first.PredictedEnd.Sub(t0), first.Due.Sub(t0), due.Add(-p.Margin).Sub(t0))
	}
	if first.Query != "be" || first.Started.Before(first.Granted) || first.Ended.Before(first.Started) || !first.Arrival.Equal(t0) {
		t.Fatalf("first part's trace %+v", first)
	}
}

// After a real-time batch's model run, best-effort work waits for its rows
// to reach the sink (Delivered), or at most PostHold of the period.
func TestBestEffortWaitsForRealTimeRowsToReachSink(t *testing.T) {
	p := sched.NewDeepQuery()
	p.Sizes = nil
	p.Learn = false
	s := sched.New(p)
	t0 := time.Unix(1000, 0)
	now := t0
	var clock sync.Mutex
	at := func(d time.Duration) { clock.Lock(); now = t0.Add(d); clock.Unlock() }
	sched.SetClock(s, func() time.Time { clock.Lock(); defer clock.Unlock(); return now })
	key := sched.Key(cnnFile, "cpu")
	rec := &recorder{Session: cnn(t)}
	for _, b := range []int{1, 8, 64} {
		s.Profiles().Observe(key, b, time.Duration(b)*time.Microsecond)
	}
	rt := s.Bind(rec.as("rt"), key, sched.Tenant{Query: "rt", Priority: sched.RealTime, Latency: 50 * time.Millisecond})
	be := s.Bind(rec.as("be"), key, sched.Tenant{Query: "be", Priority: sched.BestEffort})
	// Frames a second apart: the next is far off, nothing else holds
	// best effort back.
	s.Arrivals().Observe("rt", t0.Add(-2*time.Second), 1)
	s.Arrivals().Observe("rt", t0.Add(-time.Second), 1)
	for i, deliver := range []bool{true, false} {
		at(time.Duration(i) * time.Second)
		if err := rt.Run([]ml.Tensor{images(1)}, outputs(rec, 1)); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := be.Run([]ml.Tensor{images(4)}, outputs(rec, 4)); err != nil {
				t.Error(err)
			}
		}()
		waitFor(t, "best effort to wait for the real-time rows", func() bool { return strings.Contains(s.Why(), "on their way to its sink") })
		if runs, _ := rec.log(); runs[len(runs)-1] != "rt" {
			t.Fatalf("round %d: %v: best effort ran before the real-time rows reached the sink", i, runs)
		}
		if deliver {
			s.Delivered("rt")
		} else {
			at(time.Duration(i)*time.Second + 200*time.Millisecond) // past a tenth of the period
		}
		wg.Wait()
		if runs, _ := rec.log(); runs[len(runs)-1] != "be" {
			t.Fatalf("round %d: runs %v, want best effort to run once the hold ended", i, runs)
		}
	}
}
