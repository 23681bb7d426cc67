package coordinator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/planner/optimize"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// BenchmarkReplanXLarge times the planner's part of one re-plan
// (Coordinator.optimize after binding the script: model selection and
// worker assignment against the registered workers, and what the new plan
// assumes for the drift policy) on the 30-worker xlarge setups of
// JellyBean Table 4, with the catalog's numbers and with live numbers of a
// drift (rates 1.5x, model times 2x, tier links at the plan's traffic). The control loop re-plans at most once a
// second per query, so a re-plan must take well under that. (Compiling the
// plan needs the models' runtime, which these profile-only setups lack.)
func BenchmarkReplanXLarge(b *testing.B) {
	dir := filepath.Join("..", "..", "examples", "setups")
	for _, w := range []struct{ name, throughput string }{{"vqa", "100"}, {"aicity", "70"}} {
		b.Run(w.name+"-xlarge", func(b *testing.B) {
			inf, err := infra.LoadFile(filepath.Join(dir, w.name+"-xlarge.infra.yaml"))
			if err != nil {
				b.Fatal(err)
			}
			src, err := os.ReadFile(filepath.Join(dir, w.name+".sql"))
			if err != nil {
				b.Fatal(err)
			}
			c := &Coordinator{cfg: Config{Infra: inf, Catalog: filepath.Join(dir, w.name+".catalog.yaml"), Placement: PlaceOptimizer}}
			var ws []deploy.Worker
			for _, m := range inf.Machines() {
				typ := ""
				if m.Type != nil {
					typ = m.Type.Name
				}
				ws = append(ws, deploy.Worker{Name: strings.ReplaceAll(m.Name, ".", "_"), Tier: m.Tier, Location: m.Location, Type: typ})
			}
			req := deploy.SubmitRequest{Query: "q", Script: deploy.Script{Filename: filepath.Join(dir, w.name+".sql"), Source: string(src), BaseDir: dir,
				Catalog: filepath.Join(dir, w.name+".catalog.yaml")}}
			replan := func(c *Coordinator, live *control.Overrides) (*planner.Result, error) {
				bound, cat, err := req.Script.Bind(nil)
				if err != nil {
					return nil, err
				}
				return c.optimize(context.Background(), bound, cat, ws, c.tiers(ws), nil, nil, live, nil)
			}
			// The baseline of the budget: the exact search as long as at
			// submission.
			unbounded := &Coordinator{cfg: c.cfg}
			unbounded.cfg.ReplanBudget = optimize.DefaultAutoBudget
			res, err := replan(c, nil)
			if err != nil {
				b.Fatal(err)
			}
			// The live numbers of a drift: every stream 1.5x its planned
			// rate, every model call twice its planned time on its
			// workers; and of a slow link: the busiest tier pair the plan
			// uses measured at a quarter of its traffic.
			a := assumedOf(res.Physical, ws)
			drift := &control.Overrides{StreamRates: map[string]float64{}}
			for _, s := range a.Streams {
				drift.StreamRates[s.Stream] = 1.5 * s.Rate
			}
			for _, m := range a.Models {
				drift.Models = append(drift.Models, control.ModelTime{Call: m.Call, Variant: m.Variant, Workers: m.Workers, MsPerItem: 2 * m.MsPerItem})
			}
			slow := &control.Overrides{}
			for _, l := range a.Links {
				if len(slow.Links) == 0 || l.NeedBps > 4*slow.Links[0].Bps {
					slow.Links = []control.LinkCapacity{{From: l.From, To: l.To, Bps: l.NeedBps / 4}}
				}
			}
			// Both at once, with every tier pair capped at the traffic the
			// plan put on it at the old rates: a search the exact phase of
			// the auto strategy can take far longer, bounded by the re-plan
			// budget (a plan found infeasible within it keeps the query's
			// plan); tight-unbounded is the same with submission's budget.
			tight := &control.Overrides{StreamRates: drift.StreamRates, Models: drift.Models}
			for _, l := range a.Links {
				tight.Links = append(tight.Links, control.LinkCapacity{From: l.From, To: l.To, Bps: l.NeedBps})
			}
			for _, k := range []struct {
				name string
				c    *Coordinator
				live *control.Overrides
			}{{"catalog", c, nil}, {"drift", c, drift}, {"slow-link", c, slow}, {"tight", c, tight}, {"tight-unbounded", unbounded, tight}} {
				b.Run(k.name, func(b *testing.B) {
					for b.Loop() {
						res, err := replan(k.c, k.live)
						if strings.HasPrefix(k.name, "tight") && errors.Is(err, planner.ErrInfeasible) {
							continue
						}
						if err != nil {
							b.Fatal(err)
						}
						_ = assumedOf(res.Physical, ws)
					}
					// The baseline is the control loop's period: the share
					// of each second a re-plan would take.
					b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "period-share")
					b.ReportMetric(float64(len(ws)), "workers")
				})
			}
		})
	}
}
