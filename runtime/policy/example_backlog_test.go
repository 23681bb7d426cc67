package policy_test

import (
	"fmt"
	"strings"

	"github.com/tierflow/tierflow/planner/physical"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/policy"
)

// The worked example of docs/architecture.md ("Adding a policy"): the code
// between the markers is the doc's, word for word (TestArchitectureDoc).

// example:begin

// Backlog re-plans a query whose model call keeps more than MaxQueue
// batches waiting: the plan priced the call faster than it runs, so it
// plans again with the time measured (a per-query policy).
type Backlog struct{ MaxQueue float64 }

func (Backlog) Name() string            { return "backlog" }
func (Backlog) Cadence() policy.Cadence { return policy.EverySecond }

// Attach: a query placed by rules has no plan to price again. The policy
// keeps nothing per query, so the rule itself is the state.
func (b Backlog) Attach(p *policy.Placed) control.Policy {
	if p.Plan == nil {
		return nil
	}
	return b
}

func (b Backlog) Decide(in control.PolicyInput) *control.Decision {
	if in.Assumed == nil {
		return nil
	}
	for _, m := range in.Assumed.Models {
		for _, o := range in.Estimates.Operators {
			if o.Operator != "model "+m.Call || o.QueueLength <= b.MaxQueue || o.BatchRows <= 0 {
				continue
			}
			live := control.ModelTime{Call: m.Call, Variant: m.Variant, Workers: m.Workers, MsPerItem: o.ModelMsPerBatch / o.BatchRows}
			return &control.Decision{
				Reason:      fmt.Sprintf("backlog: %.0f batches wait for %s", o.QueueLength, m.Call),
				Constraints: control.Constraints{Live: &control.Overrides{Models: []control.ModelTime{live}}},
			}
		}
	}
	return nil
}

// example:end

// A query's model call falls behind: the policy asks for a plan with the
// time it measured.
func Example_addingAPolicy() {
	var p policy.Query = Backlog{MaxQueue: 8}
	state := p.Attach(&policy.Placed{Query: "q1", Plan: &physical.Plan{}})
	d := state.Decide(control.PolicyInput{Query: "q1",
		Assumed: &control.Assumed{Models: []control.AssumedModel{{Call: "classify", Variant: "cnn", Workers: []string{"h1"}, MsPerItem: 1}}},
		Estimates: control.Estimates{Samples: 3, Operators: []control.OperatorEstimate{
			{Operator: "model classify", QueueLength: 12, BatchRows: 8, ModelMsPerBatch: 40}}}})
	fmt.Println(p.Name(), "|", p.Cadence(), "|", d.Reason, "|", d.Live.Models[0].MsPerItem, "ms per item")
	fmt.Println(strings.Contains(fmt.Sprint(policy.Buildable()), "backlog")) // not registered: an example
	// Output:
	// backlog | per query, at most every 1s | backlog: 12 batches wait for classify | 5 ms per item
	// false
}
