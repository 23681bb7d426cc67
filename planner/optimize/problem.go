package optimize

// Problem is everything the optimizer needs: the operator DAG with its profiles,
// the infrastructure, link costs and the objectives. All rates are items per
// second, all sizes KB (1 KB = 1024 bytes) per item, all prices per hour.
type Problem struct {
	Name string `json:"name,omitempty"`
	// Sources produce items; they run on no worker. Every source sits in a tier
	// (normally the lowest); A2 forbids sending its items to a lower tier.
	Sources []Source `json:"sources"`
	// Operators are the ML and relational operators to place, in any order.
	Operators []Operator `json:"operators"`
	// Edges connect a source or an operator to an operator.
	Edges []Edge `json:"edges"`
	// EndToEnd, when set, holds measured end-to-end accuracies per variant
	// combination; a plan whose combination is listed takes that accuracy
	// (the prototype does so), otherwise accuracy propagates through profiles.
	EndToEnd *EndToEndAccuracy `json:"end_to_end,omitempty"`

	// Tiers in order, lowest (where the data sources are) first.
	Tiers []Tier `json:"tiers"`
	// Workers are the machines; each serves at most one operator.
	Workers []Worker `json:"workers"`

	// Link cost multipliers. The network cost per hour of a flow is
	// CommCostScaling x multiplier x items/s x KB/item x 3600 / 1024^2, so with
	// CommCostScaling 1 a multiplier is a price per GB. Lookup order for a flow
	// from worker a to worker b: b in a lower tier is forbidden (A2); same tier and
	// same location is free (A1); otherwise the WorkerLinks entry for (a,b), else
	// the TierLinks entry for (tier a, tier b), else 0 (the prototype's rule for a
	// missing pair). Flows from a source use SourceLinks, then TierLinks, the same
	// way.
	WorkerLinks []WorkerLink `json:"worker_links,omitempty"`
	SourceLinks []SourceLink `json:"source_links,omitempty"`
	TierLinks   []TierLink   `json:"tier_links,omitempty"`
	// CommCostScaling multiplies every network cost (0.1 in the prototype's
	// config). Zero means 1.
	CommCostScaling float64 `json:"comm_cost_scaling,omitempty"`

	Objectives Objectives `json:"objectives"`

	// Reserved is the capacity that queries already running hold on workers
	// (the coordinator's live view): a plan may use only the rest. Without it
	// each query is planned as if it ran alone.
	Reserved []Reservation `json:"reserved,omitempty"`
}

// Reservation is the share of one worker's time taken by running queries:
// Busy 0.25 leaves three quarters of its capacity, for every variant, to the
// plan; Busy 1 (or more) leaves none, and the worker cannot be used.
type Reservation struct {
	Worker string  `json:"worker"`
	Busy   float64 `json:"busy"`
	// By says who holds it (query ids), for reasons and EXPLAIN.
	By []string `json:"by,omitempty"`
}

// Source is a data source: Rate items per second produced in Tier at Location.
type Source struct {
	Name     string  `json:"name"`
	Rate     float64 `json:"rate"`
	Tier     string  `json:"tier"`
	Location string  `json:"location,omitempty"`
}

// Operator kinds.
const (
	KindML         = "ml"
	KindRelational = "relational"
)

// Operator is one node of the DAG that runs on workers.
type Operator struct {
	Name string `json:"name"`
	// Kind is KindML or KindRelational (empty means KindML when the operator
	// has accuracy data, relational otherwise); it only affects reporting and
	// the most-accurate baselines.
	Kind string `json:"kind,omitempty"`
	// AccuracyInputs names the upstream operators whose output accuracies index
	// the rows of each variant's Profile, in the order of AccuracyRow.Inputs.
	AccuracyInputs []string `json:"accuracy_inputs,omitempty"`
	// Variants: at least one (a relational operator has one, e.g. "default").
	Variants []Variant `json:"variants"`
}

// Variant is one implementation of an operator (a model variant for ML).
type Variant struct {
	Name string `json:"name"`
	// ProxyCost ranks variants before workers are known (JellyBean 4.2: the
	// prototype uses latency on the strongest worker).
	ProxyCost float64 `json:"proxy_cost"`
	// Accuracy is the standalone accuracy (used when Profile has no row for
	// the inputs, or the operator has no AccuracyInputs).
	Accuracy *float64 `json:"accuracy,omitempty"`
	// Profile rows: input accuracies (aligned with Operator.AccuracyInputs) ->
	// output accuracy. Lookup is conservative (JellyBean 4.1): among rows whose
	// inputs are all <= the actual input accuracies, the highest output;
	// monotonicity of outputs in inputs makes that a lower bound.
	Profile []AccuracyRow `json:"profile,omitempty"`
	// LatencyMs per item, keyed by worker name or, failing that, by worker
	// Type. A worker with no entry cannot run this variant. Capacity is
	// 1000 / latency items per second.
	LatencyMs map[string]float64 `json:"latency_ms"`
}

// AccuracyRow is one measured point of an accuracy profile.
type AccuracyRow struct {
	Inputs []float64 `json:"input_accuracies"`
	Output float64   `json:"output_accuracy"`
}

// EndToEndAccuracy lists measured accuracies of the sink per variant combination
// of Operators (operators not listed do not matter).
type EndToEndAccuracy struct {
	Operators []string         `json:"operators"`
	Rows      []EndToEndRecord `json:"rows"`
}

// EndToEndRecord is the accuracy of one combination, Variants aligned with
// EndToEndAccuracy.Operators.
type EndToEndRecord struct {
	Variants []string `json:"variants"`
	Accuracy float64  `json:"accuracy"`
}

// Edge carries items from a source or operator From to operator To.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Ratio is the throughput normalization: items into To per item out of
	// From. Zero means 1. An operator's demand T_v is the minimum over its
	// in-edges of T_from x Ratio; a source's T is its rate.
	Ratio float64 `json:"ratio,omitempty"`
	// KB per item carried (per item into To). Sizes may override it per
	// variant pair.
	KB    float64       `json:"kb"`
	Sizes []MessageSize `json:"sizes,omitempty"`
}

// MessageSize overrides Edge.KB for a variant pair; "" or "default" matches any
// variant. The most specific match wins (both set, then from only, then to only).
type MessageSize struct {
	FromVariant string  `json:"from_variant,omitempty"`
	ToVariant   string  `json:"to_variant,omitempty"`
	KB          float64 `json:"kb"`
}

// Tier is one infrastructure tier.
type Tier struct {
	Name string `json:"name"`
	// Locations is this tier's fan-out: how many locations of this tier sit
	// under each location of the next higher tier (zero means 1). TCoeff of a
	// tier (JellyBean 4.3) is the product of Locations from the tier up to the
	// top: cloud 1, hub 2, edge 5 gives TCoeff 1, 2, 10.
	Locations int `json:"locations,omitempty"`
}

// Worker is one machine (with TCoeff > 1: one per location of its tier).
type Worker struct {
	Name     string  `json:"name"`
	Tier     string  `json:"tier"`
	Location string  `json:"location,omitempty"`
	Type     string  `json:"type,omitempty"`
	Price    float64 `json:"price_per_hour"`
	// GPU names the worker's accelerator ("" for none). Only the end-to-end
	// baselines (PTC, PTE, SPC: the paper's cloud GPU workers) read it.
	GPU string `json:"gpu,omitempty"`
}

// WorkerLink is the link cost multiplier from worker From to worker To.
type WorkerLink struct {
	From       string  `json:"from"`
	To         string  `json:"to"`
	Multiplier float64 `json:"multiplier"`
}

// SourceLink is the link cost multiplier from a source to a worker.
type SourceLink struct {
	Source     string  `json:"source"`
	Worker     string  `json:"worker"`
	Multiplier float64 `json:"multiplier"`
}

// TierLink is the default multiplier and the bandwidth cap between two tiers
// (From may equal To, for traffic between locations of one tier).
type TierLink struct {
	From       string  `json:"from"`
	To         string  `json:"to"`
	Multiplier float64 `json:"multiplier"`
	// BandwidthMBps caps the traffic on this tier pair in MB/s (1 MB = 1024
	// KB, the unit of message sizes); zero means unlimited.
	BandwidthMBps float64 `json:"bandwidth_mbps,omitempty"`
}

// Objectives are the targets a plan must meet.
type Objectives struct {
	// Sink is the operator whose output accuracy and throughput are the plan's.
	Sink string `json:"sink"`
	// MinAccuracy, when set, is the lowest acceptable accuracy of the sink.
	MinAccuracy *float64 `json:"min_accuracy,omitempty"`
	// Throughput, when > 0, is the required sink throughput in items/s: every
	// source rate is scaled by the same factor so that the sink's demand T_sink
	// equals it. Zero keeps the sources' rates (the sink must then keep up with
	// them).
	Throughput float64 `json:"throughput,omitempty"`
	// Budget, when > 0, is the highest acceptable total cost per hour and
	// turns the objective around (the dual objective): the most accurate plan
	// within it, the cheapest of that accuracy (WithinBudget).
	Budget float64 `json:"budget,omitempty"`
	// LatencyMs, when > 0, is the query's end-to-end LATENCY bound: the
	// optimizer's cost model does not use it; the physical plan turns it
	// into each ML operator's compute budget and batch size.
	LatencyMs float64 `json:"latency_ms,omitempty"`
}

// Float returns a pointer to v, for optional fields such as MinAccuracy.
func Float(v float64) *float64 { return &v }
