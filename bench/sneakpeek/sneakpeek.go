package sneakpeek

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/examples/fashion"
	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/runtime/dataaware"
	"github.com/tierflow/tierflow/runtime/inference/sched"
	"github.com/tierflow/tierflow/runtime/modelzoo"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// sneakpeekRow is one row of either table (estimate or schedule); JSON
// leaves out the other kind's fields.
type sneakpeekRow struct {
	Kind             string   `json:"kind"`
	Mix              string   `json:"mix"`
	Estimator        string   `json:"estimator,omitempty"`
	Error            *float64 `json:"error,omitempty"`
	Policy           string   `json:"policy,omitempty"`
	Utility          *float64 `json:"utility,omitempty"`
	Accuracy         *float64 `json:"accuracy,omitempty"`
	DeadlineMissRate *float64 `json:"deadline_miss_rate,omitempty"`
}

func Command(benv *bench.Env) *cobra.Command {
	var (
		mixes                   string
		dir                     string
		rows, windows, requests int
		deadline                float64
		threshold, threads      int
		penalty                 string
		seed                    uint64
	)
	c := &cobra.Command{
		Use:   "sneakpeek",
		Short: "Data-aware accuracy estimates and request scheduling (SneakPeek) on the Fashion-MNIST variants",
		Long: `sneakpeek runs the Fashion-MNIST model zoo (examples/fashion: the four classify
variants and the three garment variants, a second application on the same
images) through ONNX Runtime on the 2,000 labelled test images: the even rows
profile every variant (accuracy, recall per class), the odd rows are the pool
each mix's stream is drawn from.

Estimates: for every mix, a stream of --rows rows drawn with its class
frequencies; the error is the mean absolute difference (percentage points),
over all seven variants, between the estimated and the measured accuracy on
that stream. "profiled" is the variant's profiled accuracy; "k1" and "k5" are
SneakPeek's: a Dirichlet posterior (Jeffreys prior) over the class mix fed by
the labels of the k nearest neighbours of each row in a 2,000-image training
sample (64-dimensional random projection), times the per-class recall.

Schedules: --windows windows of --requests requests each (alternating the two
applications, rows drawn with the mix, arrivals spread over the window,
deadlines around --deadline times the slowest variant's one-row latency),
scheduled by MaxAcc-EDF, LO-EDF, Grouped (Algorithm 1) and SneakPeek (grouped,
data-aware accuracy, groups split by estimated class, short-circuit answer),
then run: every batch goes through ONNX Runtime, times come from the batch
latency measured here at start (fixed + per row), utility = correct x (1 -
penalty). Rows with mix "mean" average the mixes.

--mixes FILE is JSON: [{"name": "...", "class_freq": [10 numbers]}, ...] in
Fashion-MNIST label order (T-shirt/top, Trouser, Pullover, Dress, Coat, Sandal,
Shirt, Sneaker, Bag, Ankle boot); without it, built-in skewed mixes.`,
		Example: `  tierflow bench sneakpeek
  tierflow bench sneakpeek --mixes mixes.json --format json
  tierflow bench sneakpeek --penalty sigmoid --deadline 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pen, err := dataaware.ParsePenalty(penalty)
			if err != nil {
				return cli.BadInput(err)
			}
			if rows < 1 || windows < 1 || requests < 2 || deadline <= 0 || threshold < 0 {
				return cli.BadInput(fmt.Errorf("--rows, --windows must be at least 1, --requests at least 2, --deadline positive, --threshold not negative"))
			}
			ms := dataaware.BuiltinMixes()
			if mixes != "" {
				if ms, err = dataaware.LoadMixes(mixes, len(fashion.Labels)); err != nil {
					return cli.BadInput(err)
				}
			}
			d, closeEnv, err := sneakpeekData(benv, dir, threads, pen)
			if err != nil {
				return err
			}
			defer closeEnv()
			cfg := BenchConfig{StreamRows: rows, Windows: windows, Requests: requests, Deadline: deadline, Threshold: threshold, Seed: seed}
			for i := range d.Labels {
				if i%2 == 0 {
					cfg.Profile = append(cfg.Profile, i)
				} else {
					cfg.Pool = append(cfg.Pool, i)
				}
			}
			// The workers' policies (tierflow worker --sched), so the
			// table measures the code that schedules the engine.
			var policies []dataaware.Scheduler
			for _, name := range []string{sched.MaxAccEDFName, sched.LOEDFName, sched.GroupedName, sched.SneakPeekName} {
				p, _ := sched.NewDataAware(name)
				if g, ok := p.Scheduler.(dataaware.Grouped); ok {
					g.Threshold = threshold
					p.Scheduler = g
				}
				policies = append(policies, p.Scheduler)
			}
			var est []EstimateRow
			var sch []ScheduleRow
			prog := benv.Progress(int64(len(ms)), "bench sneakpeek")
			for _, m := range ms {
				prog.Describe("mix " + m.Name)
				est = append(est, d.Estimates(m, cfg)...)
				rs, err := d.Schedules(m, cfg, policies)
				if err != nil {
					prog.Done()
					return err
				}
				sch = append(sch, rs...)
				prog.Add(1)
			}
			prog.Done()
			var out []sneakpeekRow
			for _, r := range MeanEstimates(est) {
				e := r.Error
				out = append(out, sneakpeekRow{Kind: r.Kind, Mix: r.Mix, Estimator: r.Estimator, Error: &e})
			}
			for _, r := range MeanSchedules(sch) {
				u, ac, mr := r.Utility, r.Accuracy, r.DeadlineMissRate
				out = append(out, sneakpeekRow{Kind: r.Kind, Mix: r.Mix, Policy: r.Policy, Utility: &u, Accuracy: &ac, DeadlineMissRate: &mr})
			}
			if benv.G().Format == "" || benv.G().Format == "table" {
				var e []EstimateRow
				var s []ScheduleRow
				e, s = MeanEstimates(est), MeanSchedules(sch)
				fmt.Fprintln(benv.Out, "Accuracy estimates: mean absolute error over the variants, percentage points")
				if err := cli.PrintRows(benv.Out, "table", e); err != nil {
					return err
				}
				fmt.Fprintf(benv.Out, "\nSchedules (%s penalty, %d windows x %d requests per mix):\n", pen, windows, requests)
				return cli.PrintRows(benv.Out, "table", s)
			}
			return benv.PrintRows(out)
		},
	}
	fl := c.Flags()
	fl.StringVar(&mixes, "mixes", "", "JSON file of class mixes (default: built-in skewed mixes)")
	fl.StringVar(&dir, "dir", filepath.Join("examples", "fashion"), "the Fashion-MNIST example (models/, data/)")
	fl.IntVar(&rows, "rows", 1000, "rows of each mix's stream (estimates)")
	fl.IntVar(&windows, "windows", 60, "scheduling windows per mix")
	fl.IntVar(&requests, "requests", 12, "requests per window (alternating the applications)")
	fl.Float64Var(&deadline, "deadline", 1, "mean deadline after the window, in units of the slowest variant's one-row latency")
	fl.IntVar(&threshold, "threshold", 5, "groups solved exactly (Algorithm 1's brute-force threshold)")
	fl.StringVar(&penalty, "penalty", "step", "deadline penalty: step, linear or sigmoid (SneakPeek 6.1)")
	fl.IntVar(&threads, "threads", 1, "intra-op threads per session")
	fl.Uint64Var(&seed, "seed", 1, "seed of the streams and windows")
	return c
}

// sneakpeekData loads the example's images, runs every variant on all of
// them through ONNX Runtime, measures each variant's batch latency, and
// indexes the training sample.
func sneakpeekData(benv *bench.Env, dir string, threads int, pen dataaware.Penalty) (*BenchData, func(), error) {
	test, err := fashion.LoadSubset(dir)
	if err != nil {
		return nil, nil, cli.BadInput(err)
	}
	train, err := fashion.LoadTrainSample(dir)
	if err != nil {
		return nil, nil, cli.BadInput(err)
	}
	ix, err := dataaware.NewKNN(train.Images, train.Labels, 784, fashion.Labels, 5, 64, 1)
	if err != nil {
		return nil, nil, err
	}
	env, err := onnx.Open(benv.G().ORTLib)
	if err != nil {
		return nil, nil, err
	}
	groupOf := make([]int, len(fashion.Labels))
	for c, g := range fashion.GroupOf([]uint8{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		groupOf[c] = int(g)
	}
	identity := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	d := &BenchData{Classes: fashion.Labels, Labels: test.Labels, Rows: test.Images, Dim: 784, KNN: ix,
		Predicted: map[string][]int{}, Latency: map[string][2]float64{},
		Apps: []BenchApp{
			{Name: "classify", Classes: fashion.Labels, ClassOf: identity, Variants: []string{"logreg", "mlp-small", "mlp-large", "cnn"}, Penalty: pen},
			{Name: "garment", Classes: fashion.Groups, ClassOf: groupOf, Variants: []string{"garment-logreg", "garment-mlp-small", "garment-mlp"}, Penalty: pen},
		}}
	sess := map[string]*onnx.Session{}
	run := func(v string, rows []int) ([]int, error) {
		s := sess[v]
		x := make([]float32, 0, len(rows)*784)
		for _, r := range rows {
			x = append(x, test.Images[r*784:(r+1)*784]...)
		}
		in := []ml.Tensor{{DType: ml.Float32, Shape: []int64{int64(len(rows)), 1, 28, 28}, F32: x}}
		out := make([]ml.Tensor, len(s.Outputs()))
		if err := s.Run(in, out); err != nil {
			return nil, err
		}
		for i, o := range s.Outputs() {
			if o.Name != "probs" {
				continue
			}
			k := len(out[i].F32) / len(rows)
			pred := make([]int, len(rows))
			for j := range pred {
				pred[j] = modelzoo.Argmax(out[i].F32[j*k : (j+1)*k])
			}
			return pred, nil
		}
		return nil, fmt.Errorf("%s has no probs output", v)
	}
	all := make([]int, len(test.Labels))
	for i := range all {
		all[i] = i
	}
	for _, app := range d.Apps {
		for _, v := range app.Variants {
			s, err := env.Session(filepath.Join(dir, "models", v+".onnx"), onnx.Options{Device: onnx.CPU, IntraOpThreads: threads})
			if err != nil {
				env.CloseSessions()
				return nil, nil, err
			}
			sess[v] = s
			var pred []int
			for start := 0; start < len(all); start += 200 {
				p, err := run(v, all[start:min(start+200, len(all))])
				if err != nil {
					env.CloseSessions()
					return nil, nil, err
				}
				pred = append(pred, p...)
			}
			d.Predicted[v] = pred
			// Batch latency at 1 and 16 rows, fixed + per row: the 10th
			// percentile of 101 calls each, the service time without the
			// waits of a shared machine (a median here moves by 3x
			// between runs under load).
			var t1, t16 []time.Duration
			for i := 0; i < 101; i++ {
				for _, n := range []int{1, 16} {
					st := time.Now()
					if _, err := run(v, all[i%100*16:i%100*16+n]); err != nil {
						env.CloseSessions()
						return nil, nil, err
					}
					if n == 1 {
						t1 = append(t1, time.Since(st))
					} else {
						t16 = append(t16, time.Since(st))
					}
				}
			}
			d.Latency[v] = FitLatency(1, Quantile(t1, 0.1), 16, Quantile(t16, 0.1))
			fmt.Fprintf(benv.Err, "-- %s: batch latency %.4f ms + %.4f ms per row (%s)\n", v, d.Latency[v][0], d.Latency[v][1], s.Provider())
		}
	}
	d.Infer = run
	return d, env.CloseSessions, nil
}
