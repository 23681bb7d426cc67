package coordinator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// BenchmarkReplanXLarge times the planner's part of one re-plan
// (Coordinator.optimize after binding the script: model selection and
// worker assignment against the registered workers) on the 30-worker xlarge
// setups of JellyBean Table 4. The control loop re-plans at most once a
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
			replan := func() error {
				bound, cat, err := req.Script.Bind(nil)
				if err != nil {
					return err
				}
				_, err = c.optimize(context.Background(), bound, cat, ws, c.tiers(ws), nil, nil, nil)
				return err
			}
			if err := replan(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(ws)), "workers")
			for b.Loop() {
				if err := replan(); err != nil {
					b.Fatal(err)
				}
			}
			// The baseline is the control loop's period: the share of each
			// second a re-plan would take.
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "period-share")
		})
	}
}
