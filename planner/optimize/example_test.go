package optimize_test

import (
	"context"
	"fmt"

	"github.com/tierflow/tierflow/planner/jellybean"
	"github.com/tierflow/tierflow/planner/optimize"
)

// The prototype's published inputs: auto finds and proves the optimum, cheaper
// than the prototype's own plan (7.5088).
func ExampleRegistry_Optimize() {
	pr, err := jellybean.Load("../jellybean/testdata/jellybean-vqa-medium")
	if err != nil {
		panic(err)
	}
	p, err := pr.Problem("p75")
	if err != nil {
		panic(err)
	}
	plan, err := optimize.DefaultRegistry().Optimize(context.Background(), "auto", p, optimize.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("total %.4f (compute %.3f, network %.4f), accuracy %.2f, optimal %v\n",
		plan.TotalCost, plan.ComputeCost, plan.NetworkCost, plan.Accuracy, plan.Optimal)
	for _, op := range plan.Operators {
		fmt.Print(op.Name, " = ", op.Variant, " on")
		for _, w := range op.Workers {
			fmt.Printf(" %s(%.0f%%)", w.Name, 100*w.Share)
		}
		fmt.Println()
	}
	// Output:
	// total 7.4850 (compute 6.242, network 1.2430), accuracy 56.59, optimal true
	// ExtractImageFeature = resnet18 on workflow-compute-cpu-2(25%) workflow-compute-cpu-5(68%) workflow-compute-cpu-1(7%)
	// SpeechRecognition = wav2vec2-large-960h-lv60-self on workflow-compute-cpu-4(9%) workflow-compute-gpu-1(91%)
	// VQA = default on workflow-compute-cpu-6(100%)
}

// Evaluate costs a given plan: here the one the prototype publishes.
func ExampleEvaluate() {
	pr, err := jellybean.Load("../jellybean/testdata/jellybean-vqa-medium")
	if err != nil {
		panic(err)
	}
	p, err := pr.Problem("p75")
	if err != nil {
		panic(err)
	}
	plan, err := optimize.Evaluate(p, optimize.Assignment{
		{Operator: "ExtractImageFeature", Variant: "resnet18", Workers: []string{"workflow-compute-cpu-1", "workflow-compute-cpu-2", "workflow-compute-cpu-5"}},
		{Operator: "SpeechRecognition", Variant: "wav2vec2-large-960h-lv60-self", Workers: []string{"workflow-compute-gpu-1", "workflow-compute-cpu-3"}},
		{Operator: "VQA", Variant: "default", Workers: []string{"workflow-compute-cpu-6"}},
	}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("feasible %v, total %.4f (compute %.3f, network %.7f), accuracy %.2f\n",
		plan.Feasible, plan.TotalCost, plan.ComputeCost, plan.NetworkCost, plan.Accuracy)
	// Output:
	// feasible true, total 7.5088 (compute 6.242, network 1.2667783), accuracy 56.59
}

// The accuracy/cost trade-off on the same inputs (no accuracy floor): the
// Pareto frontier, then the most accurate plan within 9 per hour.
func ExampleFrontier() {
	pr, err := jellybean.Load("../jellybean/testdata/jellybean-vqa-medium")
	if err != nil {
		panic(err)
	}
	p, err := pr.Problem("p75")
	if err != nil {
		panic(err)
	}
	p.Objectives.MinAccuracy = nil
	ctx := context.Background()
	pts, err := optimize.Frontier(ctx, p, optimize.Options{})
	if err != nil {
		panic(err)
	}
	for _, pl := range pts {
		fmt.Printf("accuracy %.2f for %.4f per hour\n", pl.Accuracy, pl.TotalCost)
	}
	p.Objectives.Budget = 9
	pl, err := optimize.WithinBudget(ctx, p, optimize.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("within 9: accuracy %.2f for %.4f per hour\n", pl.Accuracy, pl.TotalCost)
	// Output:
	// accuracy 58.33 for 17.8777 per hour
	// accuracy 58.19 for 16.5747 per hour
	// accuracy 57.94 for 13.7145 per hour
	// accuracy 56.85 for 7.8755 per hour
	// accuracy 56.59 for 7.4850 per hour
	// accuracy 54.02 for 7.0266 per hour
	// within 9: accuracy 56.85 for 7.8755 per hour
}
