package control

import (
	"maps"
	"slices"

	"github.com/tierflow/tierflow/planner/optimize"
)

// Constraints are what the policies ask of a query's next plan, as one
// value: the coordinator places the query with them (runtime/coordinator's
// place puts each field into the planner's inputs), whichever policy asked.
// A policy fills what it decides; the others stay empty.
type Constraints struct {
	// Exclude are workers the plan may not use (a link that stalls its
	// sender: SlowLink). They hold for one re-plan only.
	Exclude []string `json:"exclude,omitempty"`
	// Live are measured numbers that replace the catalog's and the
	// infrastructure's (Drift); a query keeps those measured once in every
	// later planning.
	Live *Overrides `json:"live,omitempty"`
	// ClassMix is the estimated class mix of the data reaching each model
	// (by model name): the plan weighs the variants' per-class recall by
	// it for a DATA AWARE accuracy target (a data-aware policy:
	// runtime/dataaware), and later plans keep it.
	ClassMix map[string]map[string]float64 `json:"class_mix,omitempty"`
	// Variants pin model calls' variants (by call name) whatever the
	// planner would choose: the variant (and with it the input size its
	// rows are resized to) that the links allow (Jellyfish). Later plans
	// keep them.
	Variants map[string]string `json:"variants,omitempty"`
	// Reserved is the capacity of the workers that other queries hold
	// (a per-cluster policy's): the plan gets only the rest.
	Reserved []optimize.Reservation `json:"reserved,omitempty"`
}

// Add adds b to c as several policies asking at once do: exclusions and
// reservations together, live numbers merged (b's win), and the first
// class mix and pin of a call kept.
func (c *Constraints) Add(b Constraints) {
	for _, w := range b.Exclude {
		if !slices.Contains(c.Exclude, w) {
			c.Exclude = append(c.Exclude, w)
		}
	}
	if !b.Live.empty() {
		if c.Live == nil {
			c.Live = &Overrides{}
		}
		c.Live.Merge(b.Live)
	}
	if b.ClassMix != nil && c.ClassMix == nil {
		c.ClassMix = b.ClassMix
	}
	for call, v := range b.Variants {
		if c.Variants == nil {
			c.Variants = map[string]string{}
		}
		if _, ok := c.Variants[call]; !ok { // the first policy's pin wins
			c.Variants[call] = v
		}
	}
	c.Reserved = append(c.Reserved, b.Reserved...)
}

// Then is what a query's plans keep after a decision d on top of c (what
// earlier decisions asked): d's class mix and pins replace c's, its live
// numbers are merged into c's (d's win), and its exclusions hold for this
// plan only. c is not changed.
func (c Constraints) Then(d Constraints) Constraints {
	out := Constraints{Exclude: slices.Clone(d.Exclude), ClassMix: c.ClassMix, Variants: maps.Clone(c.Variants), Reserved: slices.Clone(d.Reserved)}
	if c.Live != nil || d.Live != nil {
		out.Live = &Overrides{}
		out.Live.Merge(c.Live)
		out.Live.Merge(d.Live)
	}
	if d.ClassMix != nil {
		out.ClassMix = d.ClassMix
	}
	if len(d.Variants) > 0 {
		if out.Variants == nil {
			out.Variants = map[string]string{}
		}
		maps.Copy(out.Variants, d.Variants)
	}
	return out
}
