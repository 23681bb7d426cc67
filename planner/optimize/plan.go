package optimize

// Plan is an optimizer's result, or the costing of a given Assignment. The JSON
// field names are a stable contract exposed by `tierflow explain --format json`.
type Plan struct {
	Strategy    string  `json:"strategy"`
	Feasible    bool    `json:"feasible"`
	ComputeCost float64 `json:"compute_cost"`
	NetworkCost float64 `json:"network_cost"`
	TotalCost   float64 `json:"total_cost"`
	// Accuracy of the sink (end-to-end table when it lists the combination,
	// else propagated through the profiles).
	Accuracy float64 `json:"accuracy"`
	// Throughput is the sink's items/s the plan sustains (its demand T_sink
	// when every operator's demand is covered).
	Throughput  float64        `json:"throughput"`
	OptimizerMs float64        `json:"optimizer_ms"`
	Operators   []OperatorPlan `json:"operators"`
	Links       []LinkLoad     `json:"links,omitempty"`
	// Reason says, when Feasible is false, which target cannot be met and the
	// best that can; Reachable carries the same numbers.
	Reason    string     `json:"reason,omitempty"`
	Reachable *Reachable `json:"reachable,omitempty"`
	// Violations lists every broken constraint of an evaluated assignment.
	Violations []string `json:"violations,omitempty"`
	// Optimal is true when the strategy proved no cheaper feasible plan exists
	// in the decision space (see the package comment).
	Optimal bool `json:"optimal,omitempty"`
	// GaveUp is true when an exact search hit its time budget; the plan is then
	// the best found so far and Note says after how long.
	GaveUp bool   `json:"gave_up,omitempty"`
	Note   string `json:"note,omitempty"`
}

// OperatorPlan is the placement of one operator.
type OperatorPlan struct {
	Name    string `json:"name"`
	Variant string `json:"variant"`
	// Workers in fill order: all but the last run at capacity.
	Workers []WorkerShare `json:"workers"`
	// Demand is T_v, items/s into the operator.
	Demand   float64 `json:"demand"`
	Accuracy float64 `json:"accuracy"`
	// ComputeCost: the hourly price of its workers. NetworkCost: the cost of
	// the traffic on its in-edges (paid where it is received).
	ComputeCost float64 `json:"compute_cost"`
	NetworkCost float64 `json:"network_cost"`
}

// WorkerShare is one worker's part of an operator's traffic.
type WorkerShare struct {
	Name     string `json:"name"`
	Tier     string `json:"tier"`
	Location string `json:"location,omitempty"`
	// Share of the operator's items (0..1) and the items/s that is.
	Share       float64 `json:"share"`
	ItemsPerSec float64 `json:"items_per_sec"`
	// Capacity in items/s of this worker for the chosen variant.
	Capacity float64 `json:"capacity"`
	// Free is the share of Capacity running queries left to this plan
	// (Problem.Reserved), when below 1.
	Free float64 `json:"free,omitempty"`
}

// LinkLoad is the traffic on one tier pair, for bandwidth reporting.
type LinkLoad struct {
	From          string  `json:"from"`
	To            string  `json:"to"`
	MBps          float64 `json:"mbps"`
	BandwidthMBps float64 `json:"bandwidth_mbps,omitempty"`
}

// Reachable is the best an infeasible problem allows. Each field is set when the
// corresponding search ran: the highest sink accuracy any feasible placement
// reaches at the requested throughput, and the highest sink throughput any
// feasible placement sustains at the requested accuracy.
type Reachable struct {
	MaxAccuracy   *float64 `json:"max_accuracy,omitempty"`
	MaxThroughput *float64 `json:"max_throughput,omitempty"`
	// MinCost is the cheapest plan's cost per hour when a BUDGET is below it.
	MinCost *float64 `json:"min_cost,omitempty"`
}

// Assignment is a plan's decisions only: per operator its variant and workers in
// fill order (all but the last saturated, the last carries the remainder).
type Assignment []Choice

// Choice is the decision for one operator.
type Choice struct {
	Operator string   `json:"operator"`
	Variant  string   `json:"variant"`
	Workers  []string `json:"workers"`
}

// Assignment extracts the decisions of a plan, e.g. to re-evaluate it under
// another profile.
func (p *Plan) Assignment() Assignment {
	a := make(Assignment, 0, len(p.Operators))
	for _, op := range p.Operators {
		c := Choice{Operator: op.Name, Variant: op.Variant}
		for _, w := range op.Workers {
			c.Workers = append(c.Workers, w.Name)
		}
		a = append(a, c)
	}
	return a
}
