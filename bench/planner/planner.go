package planner

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/lower"
	"github.com/tierflow/tierflow/planner/optimize"
	"github.com/tierflow/tierflow/planner/rewrite"
	"github.com/tierflow/tierflow/planner/setups"
)

// plannerBenchRow is one line of `tierflow bench planner`: a strategy over the
// cases of one setup (or of all setups).
type plannerBenchRow struct {
	Setup    string `json:"setup"`
	Strategy string `json:"strategy"`
	Cases    int    `json:"cases"`
	// Feasible is the share of cases with a feasible plan.
	Feasible float64 `json:"feasible"`
	// Compared counts the cases where both this strategy and a finished
	// exhaustive search found a plan; the costs are relative to exhaustive's.
	Compared  int     `json:"compared"`
	MeanRel   float64 `json:"mean_cost_vs_exhaustive"`
	WorstRel  float64 `json:"worst_cost_vs_exhaustive"`
	P50Ms     float64 `json:"p50_ms"`
	P95Ms     float64 `json:"p95_ms"`
	GaveUp    int     `json:"gave_up"`
	MeanTotal float64 `json:"mean_total_cost"`
}

// table5Row is one line of `bench planner --report table5`: a strategy's plan
// for a setup's own targets (Table 4), as JellyBean's Table 5 shows it.
type table5Row struct {
	Setup    string  `json:"setup"`
	Strategy string  `json:"strategy"`
	Feasible bool    `json:"feasible"`
	Compute  float64 `json:"compute_cost"`
	Network  float64 `json:"network_cost"`
	Total    float64 `json:"total_cost"`
	// VsOptimum is Total over exhaustive's total (0 when either has no plan).
	VsOptimum float64 `json:"cost_vs_optimum"`
	QOMs      float64 `json:"qo_ms"`
}

// figure8Row is one point of `bench planner --report figure8`: a strategy's
// total cost at one input throughput, the setup's accuracy target held, as
// JellyBean's Figure 8 plots it.
type figure8Row struct {
	Setup      string  `json:"setup"`
	Throughput float64 `json:"throughput"`
	Strategy   string  `json:"strategy"`
	Feasible   bool    `json:"feasible"`
	Total      float64 `json:"total_cost"`
	VsOptimum  float64 `json:"cost_vs_optimum"`
}

// benchStrategies: the optimizer's strategies and the paper's baselines. ptc,
// pte and spc serve the whole workflow on every machine they use (data
// parallel), outside the decision space exhaustive proves optimal in, so they
// can come out below it (pte, which pays no network, often does).
var benchStrategies = []string{"exhaustive", "auto", "jellybean", "best-fit", "first-fit", "most-accurate", "ptc", "pte", "spc"}

// benchResult is one strategy's plan for one case of one setup.
type benchResult struct {
	setup                      string
	throughputFactor, accDelta float64
	throughput                 float64
	strategy                   string
	plan, optimum              *optimize.Plan
}

// vsOptimum is the plan's total over the optimum's, 0 when not comparable.
func (r benchResult) vsOptimum() float64 {
	ex := r.optimum
	if !r.plan.Feasible || ex == nil || !ex.Feasible || ex.GaveUp || ex.TotalCost <= 0 {
		return 0
	}
	return r.plan.TotalCost / ex.TotalCost
}

func Command(benv *bench.Env) *cobra.Command {
	var dir string
	var quick bool
	var report string
	var budget time.Duration
	c := &cobra.Command{
		Use:   "planner",
		Short: "Compare the optimizer's strategies over the Table-4 setups and a sweep of targets",
		Long: `bench planner plans every setup of JellyBean Table 4 (examples/setups) over a sweep of
throughput targets (0.5x to 1.5x the setup's) and accuracy targets (-2 to +1 points), with
every strategy, and reports per setup and strategy: the share of cases with a feasible
plan, the mean and worst cost relative to exhaustive (where exhaustive finished), and the
optimizer time p50/p95. --quick plans only each setup's own targets.

--report table5 prints, like the paper's Table 5, each strategy's compute, network and
total cost on each setup's own targets with its cost relative to the exhaustive optimum
and its optimizer time; --report figure8, like Figure 8, each strategy's total cost and
cost relative to the optimum at each input throughput (0.5x to 1.5x) with the setup's
accuracy target. The baselines are the paper's: best-fit, first-fit, most-accurate, and
the end-to-end ML systems ptc, pte (hypothetical) and spc.`,
		Example: "  tierflow bench planner\n  tierflow bench planner --report table5\n  tierflow bench planner --report figure8 --format json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				dir = findSetupsDir()
			}
			var rows any
			switch report {
			case "summary", "table5", "figure8":
			default:
				return cli.BadInput(fmt.Errorf("unknown --report %q: want summary, table5 or figure8", report))
			}
			if report == "table5" {
				quick = true
			}
			prog := benv.Progress(0, "planning")
			results, err := benchPlanner(dir, quick, budget, prog)
			prog.Done()
			if err != nil {
				return err
			}
			switch report {
			case "table5":
				rows = table5Rows(results)
			case "figure8":
				rows = figure8Rows(results)
			default:
				rows = summaryRows(results)
			}
			if err := benv.PrintRows(rows); err != nil {
				return err
			}
			if benv.G().Format != "json" {
				fmt.Fprintf(benv.Out, "machine: %s/%s, %d CPUs, %s; exhaustive time budget %s per case\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), budget)
			}
			return nil
		},
	}
	c.Flags().StringVar(&dir, "setups", "", "directory of setups.yaml (default: examples/setups of this checkout)")
	c.Flags().BoolVar(&quick, "quick", false, "only each setup's own targets (for tests)")
	c.Flags().StringVar(&report, "report", "summary", "summary, table5 (costs on each setup's targets) or figure8 (cost vs input throughput)")
	c.Flags().DurationVar(&budget, "budget", 2*time.Second, "time budget of exhaustive per case")
	return c
}

// findSetupsDir looks for examples/setups from the working directory up.
func findSetupsDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return filepath.Join("examples", "setups")
	}
	for d := wd; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "examples", "setups")
		if fileExists(filepath.Join(p, "setups.yaml")) {
			return p
		}
		if filepath.Dir(d) == d {
			return filepath.Join("examples", "setups")
		}
	}
}

// benchPlanner plans every case with every strategy, counting each plan on prog.
func benchPlanner(dir string, quick bool, budget time.Duration, prog *cli.Progress) ([]benchResult, error) {
	ix, err := setups.LoadIndex(dir)
	if err != nil {
		return nil, cli.BadInput(err)
	}
	reg := optimize.DefaultRegistry()
	var out []benchResult
	for _, s := range ix.Setups {
		cat, inf, err := s.Load(dir)
		if err != nil {
			return nil, cli.BadInput(err)
		}
		src, err := os.ReadFile(filepath.Join(dir, s.Query))
		if err != nil {
			return nil, cli.BadInput(err)
		}
		script, err := lang.Parse(s.Query, string(src))
		if err != nil {
			return nil, cli.BadInput(err)
		}
		bound, err := bind.New(cat).Bind(script.Statements[len(script.Statements)-1])
		if err != nil {
			return nil, cli.BadInput(err)
		}
		plan := rewrite.Apply(bound)
		type benchCase struct{ tf, da float64 }
		cases := []benchCase{{1, 0}}
		if !quick {
			cases = cases[:0]
			for _, tf := range []float64{0.5, 0.75, 1, 1.25, 1.5} {
				for _, da := range []float64{-2, -1, 0, 1} {
					cases = append(cases, benchCase{tf, da})
				}
			}
		}
		for _, bc := range cases {
			a, tp := s.Accuracy+bc.da, s.Throughput*bc.tf
			var ex *optimize.Plan
			for _, name := range benchStrategies {
				// A fresh problem per strategy: none sees another's scratch.
				lo, err := lower.Lower(plan, cat, inf, lower.Options{Accuracy: &a, Throughput: tp})
				if err != nil {
					return nil, cli.BadInput(err)
				}
				p, err := reg.Optimize(context.Background(), name, lo.Problem, optimize.Options{TimeBudget: budget})
				prog.Add(1)
				if err != nil {
					return nil, fmt.Errorf("%s, %s: %w", s.Name, name, err)
				}
				if name == "exhaustive" {
					ex = p
				}
				out = append(out, benchResult{setup: s.Name, throughputFactor: bc.tf, accDelta: bc.da, throughput: tp, strategy: name, plan: p, optimum: ex})
			}
		}
	}
	return out, nil
}

// summaryRows aggregates results per setup and strategy, then over all setups.
func summaryRows(results []benchResult) []plannerBenchRow {
	type acc struct {
		cases, feasible, compared, gaveUp int
		rels, times                       []float64
		total                             float64
	}
	var setupOrder []string
	per := map[[2]string]*acc{}
	for _, r := range results {
		for _, setup := range []string{r.setup, "all"} {
			k := [2]string{setup, r.strategy}
			x := per[k]
			if x == nil {
				x = &acc{}
				per[k] = x
				if r.strategy == benchStrategies[0] && setup != "all" {
					setupOrder = append(setupOrder, setup)
				}
			}
			x.cases++
			x.times = append(x.times, r.plan.OptimizerMs)
			if r.plan.GaveUp {
				x.gaveUp++
			}
			if !r.plan.Feasible {
				continue
			}
			x.feasible++
			x.total += r.plan.TotalCost
			if rel := r.vsOptimum(); rel > 0 {
				x.compared++
				x.rels = append(x.rels, rel)
			}
		}
	}
	var rows []plannerBenchRow
	for _, setup := range append(setupOrder, "all") {
		for _, name := range benchStrategies {
			if x := per[[2]string{setup, name}]; x != nil {
				rows = append(rows, plannerRow(setup, name, x.cases, x.feasible, x.compared, x.gaveUp, x.rels, x.times, x.total))
			}
		}
	}
	return rows
}

// table5Rows: every strategy on every setup's own targets.
func table5Rows(results []benchResult) []table5Row {
	var rows []table5Row
	for _, r := range results {
		if r.throughputFactor != 1 || r.accDelta != 0 {
			continue
		}
		row := table5Row{Setup: r.setup, Strategy: r.strategy, Feasible: r.plan.Feasible, QOMs: r.plan.OptimizerMs, VsOptimum: r.vsOptimum()}
		if r.plan.Feasible {
			row.Compute, row.Network, row.Total = r.plan.ComputeCost, r.plan.NetworkCost, r.plan.TotalCost
		}
		rows = append(rows, row)
	}
	return rows
}

// figure8Rows: every strategy's total at every input throughput, the setup's
// accuracy target held.
func figure8Rows(results []benchResult) []figure8Row {
	var rows []figure8Row
	for _, r := range results {
		if r.accDelta != 0 {
			continue
		}
		row := figure8Row{Setup: r.setup, Throughput: r.throughput, Strategy: r.strategy, Feasible: r.plan.Feasible, VsOptimum: r.vsOptimum()}
		if r.plan.Feasible {
			row.Total = r.plan.TotalCost
		}
		rows = append(rows, row)
	}
	return rows
}

func plannerRow(setup, strategy string, cases, feasible, compared, gaveUp int, rels, times []float64, total float64) plannerBenchRow {
	r := plannerBenchRow{Setup: setup, Strategy: strategy, Cases: cases, Compared: compared, GaveUp: gaveUp}
	if cases > 0 {
		r.Feasible = float64(feasible) / float64(cases)
	}
	if feasible > 0 {
		r.MeanTotal = total / float64(feasible)
	}
	if len(rels) > 0 {
		s := 0.0
		for _, x := range rels {
			s += x
			r.WorstRel = math.Max(r.WorstRel, x)
		}
		r.MeanRel = s / float64(len(rels))
	}
	r.P50Ms, r.P95Ms = bench.Percentile(times, 0.5), bench.Percentile(times, 0.95)
	return r
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
