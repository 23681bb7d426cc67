package optimize

import "time"

// Options tune the strategies. The zero value means the defaults, which are the
// prototype's config.yaml (beam widths 10, 10 topological orders).
type Options struct {
	// BeamModelSelection is B_MS, the model-selection beam width (JellyBean 4.2).
	BeamModelSelection int `json:"beam_ms,omitempty"`
	// BeamWorkerAssignment is B_WA, the worker-assignment beam width (Alg. 1).
	BeamWorkerAssignment int `json:"beam_wa,omitempty"`
	// TopoOrders is how many random topological orders Algorithm 1 tries (the
	// first is always the canonical one).
	TopoOrders int `json:"topo_orders,omitempty"`
	// Seed makes the random topological orders reproducible.
	Seed int64 `json:"seed,omitempty"`
	// TimeBudget bounds the exact searches (exhaustive; auto's proof phase).
	// Zero means DefaultTimeBudget.
	TimeBudget time.Duration `json:"time_budget,omitempty"`
	// CostModel prices plans; nil means PrototypeModel{}.
	CostModel CostModel `json:"-"`
}

// Defaults of Options.
const (
	DefaultBeam       = 10
	DefaultTopoOrders = 10
	DefaultTimeBudget = 10 * time.Second
)

func (o Options) withDefaults() Options {
	if o.BeamModelSelection <= 0 {
		o.BeamModelSelection = DefaultBeam
	}
	if o.BeamWorkerAssignment <= 0 {
		o.BeamWorkerAssignment = DefaultBeam
	}
	if o.TopoOrders <= 0 {
		o.TopoOrders = DefaultTopoOrders
	}
	if o.TimeBudget <= 0 {
		o.TimeBudget = DefaultTimeBudget
	}
	if o.CostModel == nil {
		o.CostModel = PrototypeModel{}
	}
	return o
}
