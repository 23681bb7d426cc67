package deploy

import (
	"github.com/tierflow/tierflow/planner/physical"
)

// Estimate is what the plan a query was placed by expects, in the units a
// run measures: the other side of EXPLAIN ANALYZE's comparison. It travels
// in QueryInfo, so a client that submitted a query can hold the run against
// its plan without planning it again.
type Estimate struct {
	Strategy string `json:"strategy"`
	// Costs per hour: the workers' prices and the priced bytes between
	// tiers and locations.
	ComputeCost float64 `json:"compute_cost"`
	NetworkCost float64 `json:"network_cost"`
	Accuracy    float64 `json:"accuracy"`
	// Throughput is the items per second the plan sustains into its sink
	// stage; TargetThroughput the query's THROUGHPUT (items entering the
	// workflow per second; 0 when the query states none).
	Throughput       float64          `json:"throughput"`
	TargetThroughput float64          `json:"target_throughput,omitempty"`
	TargetAccuracy   *float64         `json:"target_accuracy,omitempty"`
	Sources          []SourceEstimate `json:"sources,omitempty"`
	Stages           []StageEstimate  `json:"stages,omitempty"`
	Links            []LinkEstimate   `json:"links,omitempty"`
}

// SourceEstimate is a stream feeding the plan at the rate it assumed.
type SourceEstimate struct {
	Name   string  `json:"name"`
	Stream string  `json:"stream,omitempty"`
	Tier   string  `json:"tier,omitempty"`
	Rate   float64 `json:"rate"`
	// Bounded: a table (or a SELECT without FROM) read once, as fast as
	// it goes: the plan counts it as one item a second, no rate to hold
	// the run against.
	Bounded bool `json:"bounded,omitempty"`
}

// StageEstimate is one placed operator of the plan: its variant, the items
// per second it must take, and its workers' shares of them.
type StageEstimate struct {
	Name        string           `json:"name"`
	Kind        string           `json:"kind"`
	Model       string           `json:"model,omitempty"`
	Variant     string           `json:"variant,omitempty"`
	Demand      float64          `json:"demand"`
	Accuracy    float64          `json:"accuracy,omitempty"`
	ComputeCost float64          `json:"compute_cost"`
	NetworkCost float64          `json:"network_cost"`
	Workers     []WorkerEstimate `json:"workers,omitempty"`
}

// WorkerEstimate is one worker's part of a stage.
type WorkerEstimate struct {
	Name        string  `json:"name"`
	Tier        string  `json:"tier"`
	ItemsPerSec float64 `json:"items_per_sec"`
	Capacity    float64 `json:"capacity"`
}

// LinkEstimate is the traffic the plan sends from one tier to another, in
// MiB per second (KB items x items/s / 1024, as the planner counts).
type LinkEstimate struct {
	From string  `json:"from"`
	To   string  `json:"to"`
	MBps float64 `json:"mbps"`
}

// EstimateOf is the estimate of a physical plan; target is the query's
// THROUGHPUT objective (0 for none).
func EstimateOf(p *physical.Plan, target float64) *Estimate {
	e := &Estimate{Strategy: p.Strategy, ComputeCost: p.ComputeCost, NetworkCost: p.NetworkCost, Accuracy: p.Accuracy,
		Throughput: p.Throughput, TargetThroughput: target, TargetAccuracy: p.Targets.Accuracy}
	for _, s := range p.Sources {
		e.Sources = append(e.Sources, SourceEstimate{Name: s.Name, Stream: s.Stream, Tier: s.Tier, Rate: s.Rate, Bounded: s.Bounded})
	}
	for _, op := range p.Operators {
		st := StageEstimate{Name: op.Name, Kind: op.Kind, Model: op.Model, Variant: op.Variant, Demand: op.Demand,
			Accuracy: op.Accuracy, ComputeCost: op.ComputeCost, NetworkCost: op.NetworkCost}
		for _, w := range op.Workers {
			st.Workers = append(st.Workers, WorkerEstimate{Name: w.Name, Tier: w.Tier, ItemsPerSec: w.ItemsPerSec, Capacity: w.Capacity})
		}
		e.Stages = append(e.Stages, st)
	}
	for _, l := range p.Links {
		e.Links = append(e.Links, LinkEstimate{From: l.From, To: l.To, MBps: l.MBps})
	}
	return e
}
