// Package explain renders physical plans for EXPLAIN: an indented text tree
// (operators from the result down to the sources, each with its variant,
// workers, throughput, accuracy and costs, then totals and the optimizer time),
// the stable JSON contract, and a Graphviz DOT graph clustered by tier. It
// imports the planner's physical package; nothing that runs.
package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/tierflow/tierflow/planner/internal/treeprint"
	"github.com/tierflow/tierflow/planner/physical"
)

// Formats EXPLAIN understands.
var Formats = []string{"text", "json", "dot"}

// Write renders p in format ("text", "json" or "dot").
func Write(w io.Writer, format string, p *physical.Plan) error {
	switch strings.ToLower(format) {
	case "", "text":
		_, err := io.WriteString(w, Text(p))
		return err
	case "json":
		return JSON(w, p)
	case "dot":
		_, err := io.WriteString(w, DOT(p))
		return err
	}
	return fmt.Errorf("unknown format %q: want text, json or dot", format)
}

// OptimizerTimeLine matches the one text line that varies from run to run, so
// golden tests can mask it.
var OptimizerTimeLine = regexp.MustCompile(`(?m)^Optimizer time: .*$`)

// Text renders the plan as an indented tree per operator, then the totals.
func Text(p *physical.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Plan (strategy %s): %s\n", p.Strategy, status(p))
	if p.Sink != "" && placed(p) {
		b.WriteString(Tree(p).String())
	}
	if placed(p) {
		fmt.Fprintf(&b, "Totals: compute %.4f + network %.4f = %.4f per hour\n", p.ComputeCost, p.NetworkCost, p.TotalCost)
		fmt.Fprintf(&b, "Accuracy: %.4g%s\n", p.Accuracy, target(p.Targets.Accuracy, ">="))
		thr := ""
		if p.Targets.Throughput > 0 {
			thr = fmt.Sprintf(" (target >= %.4g)", p.Targets.Throughput)
		}
		fmt.Fprintf(&b, "Throughput: %.4g items/s%s\n", p.Throughput, thr)
		if bu := p.Targets.Budget; bu > 0 && p.Feasible {
			fmt.Fprintf(&b, "Budget: %.4f of %.4g per hour (margin %.4f): the most accurate plan within it\n", p.TotalCost, bu, bu-p.TotalCost)
		}
	} else {
		// Nothing was placed: no totals to show (they would all be 0),
		// only what was asked; Reason says why it cannot be had.
		fmt.Fprintf(&b, "Targets: %s\n", targetsText(p.Targets))
	}
	if pr := p.Targets.Priority; pr != "" {
		lat := ""
		if p.Targets.LatencyMs > 0 {
			lat = fmt.Sprintf(", latency <= %.4g ms", p.Targets.LatencyMs)
		}
		fmt.Fprintf(&b, "Priority: %s%s\n", pr, lat)
	}
	if r := p.Targets.Reserved; len(r) > 0 {
		var parts []string
		for _, x := range r {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", x.Worker, 100*min(x.Busy, 1)))
		}
		fmt.Fprintf(&b, "Reserved by running queries: %s\n", strings.Join(parts, ", "))
	}
	for _, l := range p.Links {
		capTxt := ""
		if l.BandwidthMBps > 0 {
			capTxt = fmt.Sprintf(" of %.4g", l.BandwidthMBps)
		}
		fmt.Fprintf(&b, "Link %s -> %s: %.4g MB/s%s\n", l.From, l.To, l.MBps, capTxt)
	}
	if p.Note != "" {
		fmt.Fprintf(&b, "Note: %s\n", p.Note)
	}
	if !p.Feasible && p.Reason != "" {
		fmt.Fprintf(&b, "Reason: %s\n", p.Reason)
	}
	if !placed(p) {
		// The operators that would say so are not shown.
		for _, e := range p.Estimates {
			fmt.Fprintf(&b, "Estimate: %s\n", e.Text())
		}
	}
	fmt.Fprintf(&b, "Optimizer time: %.3f ms\n", p.OptimizerMs)
	return b.String()
}

// placed says whether the plan placed its operators: a feasible plan, or
// an infeasible one shown with the best it found.
func placed(p *physical.Plan) bool {
	return p.Feasible || len(p.Operators) > 0 && p.Operators[0].Variant != ""
}

// targetsText lists a plan's objectives in one line.
func targetsText(t physical.Targets) string {
	var parts []string
	if t.Accuracy != nil {
		parts = append(parts, fmt.Sprintf("accuracy >= %.4g", *t.Accuracy))
	}
	if t.Throughput > 0 {
		parts = append(parts, fmt.Sprintf("throughput >= %.4g items/s", t.Throughput))
	}
	if t.Budget > 0 {
		parts = append(parts, fmt.Sprintf("budget <= %.4g per hour", t.Budget))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func status(p *physical.Plan) string {
	switch {
	case !p.Feasible:
		return "INFEASIBLE"
	case p.Optimal:
		return "feasible, proved optimal"
	case p.GaveUp:
		return "feasible, search gave up (best found)"
	}
	return "feasible"
}

func target(t *float64, op string) string {
	if t == nil {
		return ""
	}
	return fmt.Sprintf(" (target %s %.4g)", op, *t)
}

// Tree is the plan as a tree from the result operator down to the sources.
func Tree(p *physical.Plan) *treeprint.Node {
	var build func(name string, depth int) *treeprint.Node
	build = func(name string, depth int) *treeprint.Node {
		if op := p.Operator(name); op != nil {
			n := &treeprint.Node{Head: opHead(op)}
			for _, w := range op.Workers {
				loc := w.Tier
				if w.Location != "" {
					loc += "/" + w.Location
				}
				free := ""
				if w.Free > 0 && w.Free < 1 {
					free = fmt.Sprintf(" (%.0f%% free of running queries)", 100*w.Free)
				}
				n.Details = append(n.Details, fmt.Sprintf("worker %s (%s, %s): %.1f%% of traffic, %.4g of %.4g items/s%s",
					w.Name, w.Type, loc, 100*w.Share, w.ItemsPerSec, w.Capacity, free))
			}
			if bt := op.Batch; bt != nil && len(op.Workers) > 0 {
				n.Details = append(n.Details, "batching: "+BatchText(bt))
			}
			if len(op.Classes) > 0 {
				n.Details = append(n.Details, ClassText(op))
			}
			if len(op.Estimated) > 0 {
				n.Details = append(n.Details, EstimateText(op))
			}
			n.Details = append(n.Details, fmt.Sprintf("cost: compute %.4f, network %.4f per hour", op.ComputeCost, op.NetworkCost))
			for _, f := range op.Fused {
				n.Details = append(n.Details, "runs with: "+f)
			}
			if depth < 64 {
				for _, in := range op.Inputs {
					n.Children = append(n.Children, build(in, depth+1))
				}
			}
			return n
		}
		if s := p.Source(name); s != nil {
			n := &treeprint.Node{Head: fmt.Sprintf("Source %s (tier %s, %.4g items/s)", s.Name, s.Tier, s.Rate)}
			switch {
			case s.Bounded && s.Stream == "":
				n.Head = fmt.Sprintf("Values (one row, tier %s)", s.Tier)
			case s.Bounded:
				n.Head = fmt.Sprintf("Table %s (tier %s, read once)", s.Name, s.Tier)
			}
			for _, f := range s.Fused {
				n.Details = append(n.Details, "runs with: "+f)
			}
			return n
		}
		return &treeprint.Node{Head: name}
	}
	return build(p.Sink, 0)
}

func opHead(op *physical.Operator) string {
	if op.Kind == "relational" {
		return fmt.Sprintf("%s [relational] %.4g items/s", op.Name, op.Demand)
	}
	if op.Accuracy == 0 {
		// A module without accuracy data (tracking, say): nothing to show.
		return fmt.Sprintf("%s [variant %s] %.4g items/s", op.Name, op.Variant, op.Demand)
	}
	return fmt.Sprintf("%s [variant %s] %.4g items/s, accuracy %.4g", op.Name, op.Variant, op.Demand, op.Accuracy)
}

// EstimateText says that an operator's latency is an estimate and how to
// measure it.
func EstimateText(op *physical.Operator) string {
	return fmt.Sprintf("latency estimated on %s: model %s has no latency profile for this infrastructure (tierflow profile measures one)",
		strings.Join(op.Estimated, ", "), op.Model)
}

// ClassText is the chosen variant's recall per true class in one line
// ("recall by class: Bag 96.5, Coat 80.1, ..."), each with the class's share
// of the data when the plan's accuracy is data-aware.
func ClassText(op *physical.Operator) string {
	parts := make([]string, 0, len(op.Classes))
	var sum float64
	for _, f := range op.ClassFreq {
		sum += f
	}
	for _, c := range op.Classes {
		if op.ClassFreq != nil && sum > 0 {
			parts = append(parts, fmt.Sprintf("%s %.4g (%.0f%%)", c.Class, c.Recall, 100*op.ClassFreq[c.Class]/sum))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.4g", c.Class, c.Recall))
	}
	head := "recall by class: "
	if op.ClassFreq != nil {
		head = "recall by class (estimated share of the stream): "
	}
	return head + strings.Join(parts, ", ")
}

// BatchText describes an operator's batching in one phrase.
func BatchText(b *physical.Batching) string {
	mode := "fixed"
	if b.Adaptive {
		mode = "adaptive"
	}
	return fmt.Sprintf("%s, up to %d rows (%s), max delay %s (%s)", mode, b.MaxBatch, b.BatchFrom, b.MaxDelay, b.DelayFrom)
}

// Contract is the stable JSON form of EXPLAIN (FORMAT JSON).
type Contract struct {
	Strategy    string             `json:"strategy"`
	Feasible    bool               `json:"feasible"`
	ComputeCost float64            `json:"compute_cost"`
	NetworkCost float64            `json:"network_cost"`
	TotalCost   float64            `json:"total_cost"`
	Accuracy    float64            `json:"accuracy"`
	Throughput  float64            `json:"throughput"`
	OptimizerMs float64            `json:"optimizer_ms"`
	Operators   []ContractOperator `json:"operators"`
	// Budget and Margin: a BUDGET query's cost bound and what the plan
	// leaves of it.
	Budget *float64 `json:"budget,omitempty"`
	Margin *float64 `json:"margin,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

// ContractOperator is one operator of the JSON contract.
type ContractOperator struct {
	Name    string           `json:"name"`
	Variant string           `json:"variant"`
	Workers []ContractWorker `json:"workers"`
	Batch   *ContractBatch   `json:"batch,omitempty"`
	// Estimated are the worker types whose latency the plan estimated (no
	// profile yet).
	Estimated []string `json:"estimated_latency_on,omitempty"`
}

// ContractBatch is an ML operator's dynamic batching in the JSON contract.
type ContractBatch struct {
	MaxBatch   int     `json:"max_batch"`
	MaxDelayMs float64 `json:"max_delay_ms"`
	Adaptive   bool    `json:"adaptive"`
	BatchFrom  string  `json:"max_batch_from"`
	DelayFrom  string  `json:"max_delay_from"`
}

// ContractWorker is one worker of the JSON contract.
type ContractWorker struct {
	Name  string  `json:"name"`
	Tier  string  `json:"tier"`
	Share float64 `json:"share"`
}

// ToContract converts a plan to the JSON contract.
func ToContract(p *physical.Plan) Contract {
	c := Contract{Strategy: p.Strategy, Feasible: p.Feasible, ComputeCost: p.ComputeCost, NetworkCost: p.NetworkCost,
		TotalCost: p.TotalCost, Accuracy: p.Accuracy, Throughput: p.Throughput, OptimizerMs: p.OptimizerMs,
		Operators: []ContractOperator{}}
	if bu := p.Targets.Budget; bu > 0 {
		c.Budget = &bu
		if p.Feasible {
			m := bu - p.TotalCost
			c.Margin = &m
		}
	}
	if !p.Feasible {
		c.Reason = p.Reason
		if c.Reason == "" {
			c.Reason = "no plan meets the targets"
		}
	}
	for _, op := range p.Operators {
		if op.Variant == "" {
			continue
		}
		co := ContractOperator{Name: op.Name, Variant: op.Variant, Workers: []ContractWorker{}, Estimated: op.Estimated}
		if bt := op.Batch; bt != nil {
			co.Batch = &ContractBatch{MaxBatch: bt.MaxBatch, MaxDelayMs: float64(bt.MaxDelay) / float64(time.Millisecond),
				Adaptive: bt.Adaptive, BatchFrom: bt.BatchFrom, DelayFrom: bt.DelayFrom}
		}
		for _, w := range op.Workers {
			co.Workers = append(co.Workers, ContractWorker{Name: w.Name, Tier: w.Tier, Share: w.Share})
		}
		c.Operators = append(c.Operators, co)
	}
	return c
}

// JSON writes the contract, indented.
func JSON(w io.Writer, p *physical.Plan) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(ToContract(p))
}

// DOT renders the plan as a Graphviz graph: one cluster per tier holding the
// sources and the operator placements (one node per operator and worker),
// edges along the workflow labelled with the sender's share of the traffic.
func DOT(p *physical.Plan) string {
	var b strings.Builder
	b.WriteString("digraph plan {\n  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n")
	title := fmt.Sprintf("%s: total %.4f/h (compute %.4f, network %.4f), accuracy %.4g", p.Strategy, p.TotalCost, p.ComputeCost, p.NetworkCost, p.Accuracy)
	if bu := p.Targets.Budget; bu > 0 && p.Feasible {
		title += fmt.Sprintf(", budget %.4g (margin %.4f)", bu, bu-p.TotalCost)
	}
	fmt.Fprintf(&b, "  label=%s;\n", quote(title))
	type placed struct{ id, label string }
	byTier := map[string][]placed{}
	var tiers []string
	if p.Problem != nil {
		for _, t := range p.Problem.Tiers {
			tiers = append(tiers, t.Name)
		}
	}
	nodes := map[string][]string{} // operator or source -> node ids
	for _, s := range p.Sources {
		id := "src_" + ident(s.Name)
		byTier[s.Tier] = append(byTier[s.Tier], placed{id, fmt.Sprintf("%s\\n%.4g items/s", s.Name, s.Rate)})
		nodes[s.Name] = []string{id}
	}
	for _, op := range p.Operators {
		for _, w := range op.Workers {
			id := ident(op.Name + "__" + w.Name)
			label := fmt.Sprintf("%s [%s]\\n%s: %.0f%%", op.Name, op.Variant, w.Name, 100*w.Share)
			if bt := op.Batch; bt != nil {
				mode := "fixed"
				if bt.Adaptive {
					mode = "adaptive"
				}
				label += fmt.Sprintf("\\nbatch <= %d, %s, %s", bt.MaxBatch, bt.MaxDelay, mode)
			}
			byTier[w.Tier] = append(byTier[w.Tier], placed{id, label})
			nodes[op.Name] = append(nodes[op.Name], id)
		}
	}
	for t := range byTier {
		found := false
		for _, x := range tiers {
			found = found || x == t
		}
		if !found {
			tiers = append(tiers, t)
		}
	}
	for i, t := range tiers {
		if len(byTier[t]) == 0 {
			continue
		}
		fmt.Fprintf(&b, "  subgraph cluster_%d {\n    label=%s;\n    style=rounded;\n", i, quote("tier "+t))
		ps := byTier[t]
		sort.SliceStable(ps, func(i, j int) bool { return ps[i].id < ps[j].id })
		for _, x := range ps {
			fmt.Fprintf(&b, "    %s [label=%s];\n", x.id, quote(x.label))
		}
		b.WriteString("  }\n")
	}
	for _, op := range p.Operators {
		for _, in := range op.Inputs {
			for _, from := range nodes[in] {
				for _, to := range nodes[op.Name] {
					fmt.Fprintf(&b, "  %s -> %s;\n", from, to)
				}
			}
		}
	}
	b.WriteString("}\n")
	return b.String()
}

func quote(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}

func ident(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}
