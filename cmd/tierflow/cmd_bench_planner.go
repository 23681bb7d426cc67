package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	"github.com/spf13/cobra"

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

var benchStrategies = []string{"exhaustive", "auto", "jellybean", "best-fit", "first-fit", "most-accurate"}

func newBenchPlannerCmd(a *app) *cobra.Command {
	var dir string
	var quick bool
	var budget time.Duration
	c := &cobra.Command{
		Use:   "planner",
		Short: "Compare the optimizer's strategies over the Table-4 setups and a sweep of targets",
		Long: `bench planner plans every setup of JellyBean Table 4 (examples/setups) over a sweep of
throughput targets (0.5x to 1.5x the setup's) and accuracy targets (-2 to +1 points), with
every strategy, and reports per setup and strategy: the share of cases with a feasible
plan, the mean and worst cost relative to exhaustive (where exhaustive finished), and the
optimizer time p50/p95. --quick plans only each setup's own targets.`,
		Example: "  tierflow bench planner\n  tierflow bench planner --quick --format json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				dir = findSetupsDir()
			}
			prog := newProgress(a.err, 0, "planning")
			rows, err := benchPlanner(dir, quick, budget, prog)
			prog.Done()
			if err != nil {
				return err
			}
			if err := printRows(a.out, a.g.format, rows); err != nil {
				return err
			}
			if a.g.format != "json" {
				fmt.Fprintf(a.out, "machine: %s/%s, %d CPUs, %s; exhaustive time budget %s per case\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), budget)
			}
			return nil
		},
	}
	c.Flags().StringVar(&dir, "setups", "", "directory of setups.yaml (default: examples/setups of this checkout)")
	c.Flags().BoolVar(&quick, "quick", false, "only each setup's own targets (for tests)")
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

type benchCase struct {
	accuracy, throughput float64
}

// benchPlanner plans every case with every strategy, counting each plan on prog.
func benchPlanner(dir string, quick bool, budget time.Duration, prog *progress) ([]plannerBenchRow, error) {
	ix, err := setups.LoadIndex(dir)
	if err != nil {
		return nil, badInput(err)
	}
	reg := optimize.DefaultRegistry()
	type acc struct {
		cases, feasible, compared, gaveUp int
		rels, times                       []float64
		total                             float64
	}
	all := map[string]*acc{}
	var rows []plannerBenchRow
	for _, s := range ix.Setups {
		cat, inf, err := s.Load(dir)
		if err != nil {
			return nil, badInput(err)
		}
		src, err := os.ReadFile(filepath.Join(dir, s.Query))
		if err != nil {
			return nil, badInput(err)
		}
		script, err := lang.Parse(s.Query, string(src))
		if err != nil {
			return nil, badInput(err)
		}
		bound, err := bind.New(cat).Bind(script.Statements[len(script.Statements)-1])
		if err != nil {
			return nil, badInput(err)
		}
		plan := rewrite.Apply(bound)
		var cases []benchCase
		if quick {
			cases = []benchCase{{s.Accuracy, s.Throughput}}
		} else {
			for _, tf := range []float64{0.5, 0.75, 1, 1.25, 1.5} {
				for _, da := range []float64{-2, -1, 0, 1} {
					cases = append(cases, benchCase{s.Accuracy + da, s.Throughput * tf})
				}
			}
		}
		per := map[string]*acc{}
		for _, name := range benchStrategies {
			per[name] = &acc{}
			if all[name] == nil {
				all[name] = &acc{}
			}
		}
		for _, bc := range cases {
			a := bc.accuracy
			var ex *optimize.Plan
			for _, name := range benchStrategies {
				// A fresh problem per strategy: none sees another's scratch.
				lo, err := lower.Lower(plan, cat, inf, lower.Options{Accuracy: &a, Throughput: bc.throughput})
				if err != nil {
					return nil, badInput(err)
				}
				p, err := reg.Optimize(context.Background(), name, lo.Problem, optimize.Options{TimeBudget: budget})
				prog.Add(1)
				if err != nil {
					return nil, fmt.Errorf("%s, %s: %w", s.Name, name, err)
				}
				if name == "exhaustive" {
					ex = p
				}
				for _, x := range []*acc{per[name], all[name]} {
					x.cases++
					x.times = append(x.times, p.OptimizerMs)
					if p.GaveUp {
						x.gaveUp++
					}
					if !p.Feasible {
						continue
					}
					x.feasible++
					x.total += p.TotalCost
					if ex != nil && ex.Feasible && !ex.GaveUp && ex.TotalCost > 0 {
						x.compared++
						x.rels = append(x.rels, p.TotalCost/ex.TotalCost)
					}
				}
			}
		}
		for _, name := range benchStrategies {
			rows = append(rows, plannerRow(s.Name, name, per[name].cases, per[name].feasible, per[name].compared, per[name].gaveUp, per[name].rels, per[name].times, per[name].total))
		}
	}
	for _, name := range benchStrategies {
		x := all[name]
		rows = append(rows, plannerRow("all", name, x.cases, x.feasible, x.compared, x.gaveUp, x.rels, x.times, x.total))
	}
	return rows, nil
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
	r.P50Ms, r.P95Ms = percentile(times, 0.5), percentile(times, 0.95)
	return r
}

func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}
