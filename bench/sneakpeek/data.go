package sneakpeek

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/tierflow/tierflow/runtime/dataaware"
)

// BenchApp is an application of the benchmark: a classifier family run on
// the same rows, whose class of row i is ClassOf(label_i) (the garment
// group of a Fashion-MNIST class, say).
type BenchApp struct {
	Name    string
	Classes []string
	// ClassOf maps a row's true label (an index into BenchData.Labels'
	// classes) to the application's class.
	ClassOf  []int
	Variants []string
	Penalty  dataaware.Penalty
}

// BenchData is what the SneakPeek benchmark runs on: labelled rows, every
// variant's predictions on every row (index into its app's Classes, from
// real inference), the kNN index over a training sample, and the measured
// batch latency of every variant.
type BenchData struct {
	Classes []string // the labels' classes (the estimator's)
	Labels  []uint8
	Rows    []float32 // n x Dim features
	Dim     int
	Apps    []BenchApp
	// Predicted[variant][row] is the variant's predicted class.
	Predicted map[string][]int
	KNN       *dataaware.KNN
	// Latency[variant] is Fixed, PerItem in milliseconds.
	Latency map[string][2]float64
	// Infer runs a variant on rows for real (the schedules' batches); nil
	// uses Predicted alone.
	Infer func(variant string, rows []int) ([]int, error)
	// nbs[row] are the labels of the row's 5 nearest sample points, searched
	// once: the estimates, the short-circuit's profile, the calibration and
	// the windows of every mix ask for the same rows again.
	nbs map[int][]int
}

// neighbours5 are the labels of row r's 5 nearest sample points (KNN.WithK(5)),
// nearest first.
func (d *BenchData) neighbours5(r int) []int {
	if nb, ok := d.nbs[r]; ok {
		return nb
	}
	if d.nbs == nil {
		d.nbs = map[int][]int{}
	}
	nb := d.KNN.WithK(5).Neighbours(d.Rows[r*d.Dim : (r+1)*d.Dim])
	d.nbs[r] = nb
	return nb
}

// votes5 is KNN.WithK(5).Votes of row r: its neighbours' labels counted.
func (d *BenchData) votes5(r int) []float64 {
	v := make([]float64, len(d.KNN.Classes()))
	for _, l := range d.neighbours5(r) {
		v[l]++
	}
	return v
}

// EstimateRow is one line of the estimate table: the mean absolute error
// (percentage points) of every variant's estimated accuracy against its
// measured accuracy on a mix.
type EstimateRow struct {
	Kind      string  `json:"kind"`
	Mix       string  `json:"mix"`
	Estimator string  `json:"estimator"`
	Error     float64 `json:"error"`
}

// ScheduleRow is one line of the schedule table: a policy's mean realised
// utility (correct x (1 - penalty)), accuracy and deadline miss rate over
// the windows of a mix.
type ScheduleRow struct {
	Kind             string  `json:"kind"`
	Mix              string  `json:"mix"`
	Policy           string  `json:"policy"`
	Utility          float64 `json:"utility"`
	Accuracy         float64 `json:"accuracy"`
	DeadlineMissRate float64 `json:"deadline_miss_rate"`
}

// BenchConfig sizes the benchmark.
type BenchConfig struct {
	// Profile rows give the variants' profiled accuracy and recall; the
	// streams are drawn from Pool rows (disjoint).
	Profile, Pool []int
	StreamRows    int
	Windows       int
	Requests      int
	// Deadline is the mean deadline in units of the slowest variant's
	// single-row latency; Threshold the groups solved exactly.
	Deadline  float64
	Threshold int
	Seed      uint64
}

type profiled struct {
	acc            float64
	recall, shrunk []float64
}

func (d *BenchData) profile(app BenchApp, v string, rows []int) profiled {
	n := make([]int, len(app.Classes))
	hit := make([]int, len(app.Classes))
	ok := 0
	for _, r := range rows {
		c := app.ClassOf[d.Labels[r]]
		n[c]++
		if d.Predicted[v][r] == c {
			hit[c]++
			ok++
		}
	}
	p := profiled{acc: float64(ok) / float64(max(len(rows), 1)), recall: make([]float64, len(n)), shrunk: make([]float64, len(n))}
	for c := range n {
		if n[c] > 0 {
			p.recall[c] = float64(hit[c]) / float64(n[c])
		}
		// A Beta prior of RecallPrior rows at the variant's accuracy:
		// about 100 rows a class measure a recall to +-3 points, the size
		// of most differences between variants, and a scheduler that picks
		// the best of noisy estimates picks noise (the winner's curse).
		p.shrunk[c] = (float64(hit[c]) + RecallPrior*p.acc) / (float64(n[c]) + RecallPrior)
	}
	return p
}

// RecallPrior is the weight, in rows, of the profiled accuracy in the
// per-class recall the schedulers decide with.
const RecallPrior = 100

// appTheta folds a posterior over the labels' classes into an app's classes.
func appTheta(app BenchApp, theta []float64) []float64 {
	out := make([]float64, len(app.Classes))
	for c, th := range theta {
		out[app.ClassOf[c]] += th
	}
	return out
}

// Estimates are the estimate rows of one mix: profiled accuracy, and the
// posterior of kNN evidence with k = 1 and k = 5 times per-class recall,
// each against the accuracy measured on the mix's stream.
func (d *BenchData) Estimates(m dataaware.Mix, cfg BenchConfig) []EstimateRow {
	poolLabels := make([]uint8, len(cfg.Pool))
	for i, r := range cfg.Pool {
		poolLabels[i] = d.Labels[r]
	}
	var rows []int
	for _, i := range dataaware.Draw(m, poolLabels, cfg.StreamRows, cfg.Seed) {
		rows = append(rows, cfg.Pool[i])
	}
	// One search per row serves both k: the nearest of its 5 neighbours
	// is its 1-NN.
	nbs := make([][]int, len(rows))
	for i, r := range rows {
		nbs[i] = d.neighbours5(r)
	}
	mixes := map[string][]float64{}
	for _, k := range []int{1, 5} {
		post, _ := dataaware.NewPosterior(d.Classes, dataaware.Jeffreys, 0)
		for _, nb := range nbs {
			votes := make([]float64, len(d.Classes))
			for _, l := range nb[:min(k, len(nb))] {
				votes[l]++
			}
			post.Add(votes)
		}
		mean := post.Mean()
		th := make([]float64, len(d.Classes))
		for c, name := range d.Classes {
			th[c] = mean[name]
		}
		mixes[fmt.Sprintf("k%d", k)] = th
	}
	errs := map[string]float64{}
	n := 0
	for _, app := range d.Apps {
		for _, v := range app.Variants {
			p := d.profile(app, v, cfg.Profile)
			meas := d.profile(app, v, rows).acc
			errs["profiled"] += math.Abs(p.acc - meas)
			for name, th := range mixes {
				var est float64
				for c, x := range appTheta(app, th) {
					est += x * p.recall[c]
				}
				errs[name] += math.Abs(est - meas)
			}
			n++
		}
	}
	var out []EstimateRow
	for _, e := range []string{"profiled", "k1", "k5"} {
		out = append(out, EstimateRow{Kind: "estimate", Mix: m.Name, Estimator: e, Error: round3(100 * errs[e] / float64(n))})
	}
	return out
}

// benchRequest is a request of a window with the row it classifies.
type benchRequest struct {
	row   int
	votes []float64
}

// Schedules are the schedule rows of one mix: Windows windows of Requests
// requests each (alternating applications, rows drawn with the mix,
// arrivals uniform over the window, deadlines around cfg.Deadline),
// scheduled by each policy and run for real.
func (d *BenchData) Schedules(m dataaware.Mix, cfg BenchConfig, policies []dataaware.Scheduler) ([]ScheduleRow, error) {
	poolLabels := make([]uint8, len(cfg.Pool))
	for i, r := range cfg.Pool {
		poolLabels[i] = d.Labels[r]
	}
	// The problem's models: per app its variants (profiled) and the
	// short-circuit answer (kNN k=5, its accuracy profiled too).
	unit := 0.0
	apps := make([]*dataaware.App, len(d.Apps))
	scAcc := make([]float64, len(d.Apps))
	for a, app := range d.Apps {
		apps[a] = &dataaware.App{Name: app.Name, Penalty: app.Penalty}
		for _, v := range app.Variants {
			p := d.profile(app, v, cfg.Profile)
			l := d.Latency[v]
			apps[a].Models = append(apps[a].Models, &dataaware.Model{Name: v, Accuracy: p.acc, Recall: p.shrunk, Fixed: l[0], PerItem: l[1]})
			unit = math.Max(unit, l[0]+l[1])
		}
		ok := 0
		for _, r := range cfg.Profile {
			c, _ := dataaware.Argmax(appTheta(app, d.votes5(r)))
			if c == app.ClassOf[d.Labels[r]] {
				ok++
			}
		}
		scAcc[a] = float64(ok) / float64(max(len(cfg.Profile), 1))
		apps[a].Models = append(apps[a].Models, &dataaware.Model{Name: "sneakpeek", Accuracy: scAcc[a], ShortCircuit: true})
	}
	cal := make([]*dataaware.Calibration, len(d.Apps))
	for a, app := range d.Apps {
		var votes [][]float64
		var truth []int
		for _, r := range cfg.Profile {
			votes = append(votes, appTheta(app, d.votes5(r)))
			truth = append(truth, app.ClassOf[d.Labels[r]])
		}
		cal[a] = dataaware.NewCalibration(votes, truth, len(app.Classes))
	}
	type total struct{ u, acc, miss float64 }
	tot := make([]total, len(policies))
	n := 0
	r := rand.New(rand.NewPCG(cfg.Seed, 0xd1ce))
	window := float64(cfg.Requests) / 2 * unit
	for w := 0; w < cfg.Windows; w++ {
		draw := dataaware.Draw(m, poolLabels, cfg.Requests, cfg.Seed+uint64(w)+1)
		p := &dataaware.Problem{Apps: apps, Now: window}
		var reqs []benchRequest
		for i, pi := range draw {
			row := cfg.Pool[pi]
			a := i % len(apps)
			votes := appTheta(d.Apps[a], d.votes5(row))
			arr := r.Float64() * window
			dl := window + cfg.Deadline*unit*(0.5+r.Float64())
			p.Requests = append(p.Requests, &dataaware.Request{App: a, Arrival: arr, Deadline: dl, Votes: cal[a].Votes(votes)})
			reqs = append(reqs, benchRequest{row: row, votes: votes})
		}
		for k, pol := range policies {
			s := pol.Schedule(p)
			end := dataaware.Completion(p, s)
			for _, b := range s {
				app := d.Apps[b.App]
				mod := apps[b.App].Models[b.Model]
				rows := make([]int, len(b.Requests))
				for j, i := range b.Requests {
					rows[j] = reqs[i].row
				}
				var pred []int
				if mod.ShortCircuit {
					for _, i := range b.Requests {
						c, _ := dataaware.Argmax(reqs[i].votes)
						pred = append(pred, c)
					}
				} else if d.Infer != nil {
					var err error
					if pred, err = d.Infer(mod.Name, rows); err != nil {
						return nil, err
					}
				} else {
					for _, row := range rows {
						pred = append(pred, d.Predicted[mod.Name][row])
					}
				}
				for j, i := range b.Requests {
					rq := p.Requests[i]
					correct := 0.0
					if pred[j] == app.ClassOf[d.Labels[rows[j]]] {
						correct = 1
					}
					tot[k].u += app.Penalty.Utility(correct, rq.Deadline-rq.Arrival, end[i]-rq.Arrival)
					tot[k].acc += correct
					if end[i] > rq.Deadline {
						tot[k].miss++
					}
				}
			}
		}
		n += len(p.Requests)
	}
	var out []ScheduleRow
	for k, pol := range policies {
		out = append(out, ScheduleRow{Kind: "schedule", Mix: m.Name, Policy: pol.Name(),
			Utility: round3(tot[k].u / float64(n)), Accuracy: round3(tot[k].acc / float64(n)), DeadlineMissRate: round3(tot[k].miss / float64(n))})
	}
	return out, nil
}

// MeanEstimates appends each estimator's mean error over the mixes
// (mix "mean"): the numbers the benchmark is judged by.
func MeanEstimates(rows []EstimateRow) []EstimateRow {
	sum, n := map[string]float64{}, map[string]int{}
	var order []string
	for _, r := range rows {
		if n[r.Estimator] == 0 {
			order = append(order, r.Estimator)
		}
		sum[r.Estimator] += r.Error
		n[r.Estimator]++
	}
	out := rows
	for _, e := range order {
		out = append(out, EstimateRow{Kind: "estimate", Mix: "mean", Estimator: e, Error: round3(sum[e] / float64(n[e]))})
	}
	return out
}

// MeanSchedules appends each policy's mean over the mixes (mix "mean").
func MeanSchedules(rows []ScheduleRow) []ScheduleRow {
	type acc struct {
		u, a, m float64
		n       int
	}
	sum := map[string]*acc{}
	var order []string
	for _, r := range rows {
		s := sum[r.Policy]
		if s == nil {
			s = &acc{}
			sum[r.Policy] = s
			order = append(order, r.Policy)
		}
		s.u += r.Utility
		s.a += r.Accuracy
		s.m += r.DeadlineMissRate
		s.n++
	}
	out := rows
	for _, p := range order {
		s := sum[p]
		k := float64(s.n)
		out = append(out, ScheduleRow{Kind: "schedule", Mix: "mean", Policy: p, Utility: round3(s.u / k), Accuracy: round3(s.a / k), DeadlineMissRate: round3(s.m / k)})
	}
	return out
}

// FitLatency fits Fixed + n*PerItem (milliseconds) to the median times of
// two batch sizes.
func FitLatency(n1 int, t1 time.Duration, n2 int, t2 time.Duration) [2]float64 {
	a, b := float64(t1)/1e6, float64(t2)/1e6
	per := math.Max((b-a)/float64(n2-n1), 0)
	return [2]float64{math.Max(a-per*float64(n1), 0), per}
}

// Quantile q (0..1) of durations.
func Quantile(ds []time.Duration, q float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
