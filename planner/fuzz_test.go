package planner_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/planner/optimize"
)

// FuzzPlan: whatever parses is planned against two example setups (VQA's
// join of two model chains, the fashion cascade) to a plan or an error,
// never a panic; a plan that comes back is complete and a bind error is
// positioned. Seeds (testdata/fuzz/FuzzPlan): every example script.
func FuzzPlan(f *testing.F) {
	type setup struct {
		cat *catalog.Catalog
		inf *infra.Infra
	}
	var setups []setup
	for _, dir := range []string{"../examples/vqa/", "../examples/fashion/"} {
		cat, err := catalog.LoadFile(dir + "catalog.yaml")
		if err != nil {
			f.Fatal(err)
		}
		inf, err := infra.LoadFile(dir + "infra.yaml")
		if err != nil {
			f.Fatal(err)
		}
		setups = append(setups, setup{cat, inf})
	}
	f.Add("SELECT 1")
	f.Fuzz(func(t *testing.T, src string) {
		script, err := lang.Parse("q.sql", src)
		if err != nil {
			return
		}
		for _, su := range setups {
			cat := su.cat.Clone()
			for _, s := range script.Statements {
				if ok, _ := bind.Apply(cat, s); ok {
					continue
				}
				switch s.(type) {
				case *lang.Query, *lang.Insert, *lang.Explain:
				default:
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				res, err := planner.PlanStatement(ctx, s, cat, su.inf, planner.Options{Optimize: optimize.Options{TimeBudget: 50 * time.Millisecond}})
				cancel()
				if err != nil {
					var es bind.Errors
					if errors.As(err, &es) {
						for _, e := range es {
							if e.Pos.Line == 0 {
								t.Fatalf("%q: bind error without a position: %v", src, e)
							}
						}
					}
					continue
				}
				if res.Physical == nil || res.Bound == nil || res.Rewritten == nil || res.Lowered == nil {
					t.Fatalf("%q: a plan with a missing stage: %+v", src, res)
				}
				if res.Physical.Feasible {
					if err := res.Runnable(); err != nil {
						t.Fatalf("%q: feasible plan not runnable: %v", src, err)
					}
				} else if err := res.Runnable(); !errors.Is(err, planner.ErrInfeasible) {
					t.Fatalf("%q: infeasible plan runnable: %v", src, err)
				}
			}
		}
	})
}
