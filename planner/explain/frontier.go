package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/tierflow/tierflow/planner/physical"
)

// WriteFrontier renders EXPLAIN (FRONTIER): text (a table and a scatter
// plot) or json.
func WriteFrontier(w io.Writer, format string, f *physical.Frontier) error {
	switch strings.ToLower(format) {
	case "", "text":
		_, err := io.WriteString(w, FrontierText(f))
		return err
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(FrontierContract(f))
	}
	return fmt.Errorf("unknown format %q for EXPLAIN (FRONTIER): want text or json", format)
}

// FrontierPoint is one plan of the frontier in the JSON contract.
type FrontierPoint struct {
	Accuracy    float64 `json:"accuracy"`
	TotalCost   float64 `json:"total_cost"`
	ComputeCost float64 `json:"compute_cost"`
	NetworkCost float64 `json:"network_cost"`
	// CostPerPoint is what each point of accuracy costs over the next
	// cheaper plan (per hour); absent for the cheapest.
	CostPerPoint *float64 `json:"cost_per_point,omitempty"`
	// Variants of the ML operators, by operator.
	Variants map[string]string `json:"variants"`
	// Plan is the full plan in the EXPLAIN (FORMAT JSON) contract.
	Plan Contract `json:"plan"`
}

// FrontierJSON is EXPLAIN (FRONTIER, FORMAT JSON): the frontier, most
// accurate first.
type FrontierJSON struct {
	Points      []FrontierPoint `json:"frontier"`
	Throughput  float64         `json:"throughput_target,omitempty"`
	MinAccuracy *float64        `json:"min_accuracy,omitempty"`
	OptimizerMs float64         `json:"optimizer_ms"`
}

// FrontierContract converts a frontier to its JSON form.
func FrontierContract(f *physical.Frontier) FrontierJSON {
	out := FrontierJSON{Points: []FrontierPoint{}, Throughput: f.Targets.Throughput, MinAccuracy: f.Targets.Accuracy, OptimizerMs: f.OptimizerMs}
	for i, p := range f.Points {
		pt := FrontierPoint{Accuracy: p.Accuracy, TotalCost: p.TotalCost, ComputeCost: p.ComputeCost, NetworkCost: p.NetworkCost,
			Variants: map[string]string{}, Plan: ToContract(p)}
		if c, ok := costPerPoint(f, i); ok {
			pt.CostPerPoint = &c
		}
		for _, op := range p.Operators {
			if op.Kind != "relational" && op.Variant != "" {
				pt.Variants[op.Name] = op.Variant
			}
		}
		out.Points = append(out.Points, pt)
	}
	return out
}

// costPerPoint is the extra cost per point of accuracy of point i over the
// next cheaper one.
func costPerPoint(f *physical.Frontier, i int) (float64, bool) {
	if i+1 >= len(f.Points) {
		return 0, false
	}
	a, b := f.Points[i], f.Points[i+1]
	d := a.Accuracy - b.Accuracy
	if d <= 0 {
		return 0, false
	}
	return (a.TotalCost - b.TotalCost) / d, true
}

// pointMark labels point i in the table and the plot.
func pointMark(i int) string {
	const marks = "123456789abcdefghijklmnopqrstuvwxyz"
	if i < len(marks) {
		return marks[i : i+1]
	}
	return "+"
}

// FrontierText is the table (one row per plan, most accurate first) and a
// scatter plot of accuracy against cost per hour.
func FrontierText(f *physical.Frontier) string {
	var b strings.Builder
	thr := ""
	if f.Targets.Throughput > 0 {
		thr = fmt.Sprintf(" at %.4g items/s", f.Targets.Throughput)
	}
	fmt.Fprintf(&b, "Accuracy/cost frontier%s: %d plans no other beats on both\n", thr, len(f.Points))
	if len(f.Points) == 0 {
		b.WriteString("No plan meets the throughput target.\n")
		fmt.Fprintf(&b, "Optimizer time: %.3f ms\n", f.OptimizerMs)
		return b.String()
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "#\taccuracy\tcost/h\tcompute\tnetwork\t+cost/point\t variants")
	for i, p := range f.Points {
		per := "-"
		if c, ok := costPerPoint(f, i); ok {
			per = fmt.Sprintf("%.4f", c)
		}
		var vs []string
		for _, op := range p.Operators {
			if op.Kind != "relational" && op.Variant != "" {
				vs = append(vs, op.Name+"="+op.Variant)
			}
		}
		fmt.Fprintf(tw, "%s\t%.4g\t%.4f\t%.4f\t%.4f\t%s\t %s\n", pointMark(i), p.Accuracy, p.TotalCost, p.ComputeCost, p.NetworkCost, per, strings.Join(vs, ", "))
	}
	tw.Flush()
	b.WriteString("\n")
	b.WriteString(plot(f))
	fmt.Fprintf(&b, "Optimizer time: %.3f ms\n", f.OptimizerMs)
	return b.String()
}

// plot draws the points on a grid: accuracy up, cost per hour right, each
// point by its mark in the table; "*" where two share a cell.
func plot(f *physical.Frontier) string {
	const W, H = 56, 12
	minC, maxC := math.Inf(1), math.Inf(-1)
	minA, maxA := math.Inf(1), math.Inf(-1)
	for _, p := range f.Points {
		minC, maxC = math.Min(minC, p.TotalCost), math.Max(maxC, p.TotalCost)
		minA, maxA = math.Min(minA, p.Accuracy), math.Max(maxA, p.Accuracy)
	}
	if maxC-minC < 1e-9 {
		minC, maxC = minC-0.5, maxC+0.5
	}
	if maxA-minA < 1e-9 {
		minA, maxA = minA-0.5, maxA+0.5
	}
	grid := make([][]rune, H)
	for r := range grid {
		grid[r] = []rune(strings.Repeat(" ", W))
	}
	for i, p := range f.Points {
		x := int(math.Round((p.TotalCost - minC) / (maxC - minC) * (W - 1)))
		y := H - 1 - int(math.Round((p.Accuracy-minA)/(maxA-minA)*(H-1)))
		if grid[y][x] != ' ' {
			grid[y][x] = '*'
		} else {
			grid[y][x] = rune(pointMark(i)[0])
		}
	}
	yl := func(a float64) string { return fmt.Sprintf("%8.4g", a) }
	var b strings.Builder
	b.WriteString("accuracy\n")
	for r, row := range grid {
		label := strings.Repeat(" ", 8)
		switch r {
		case 0:
			label = yl(maxA)
		case H - 1:
			label = yl(minA)
		}
		fmt.Fprintf(&b, "%s ┤%s\n", label, strings.TrimRight(string(row), " "))
	}
	fmt.Fprintf(&b, "%s └%s\n", strings.Repeat(" ", 8), strings.Repeat("─", W))
	lo, hi := fmt.Sprintf("%.4g", minC), fmt.Sprintf("%.4g", maxC)
	gap := max(1, W-len(lo)-len(hi))
	fmt.Fprintf(&b, "%s  %s%s%s  cost per hour\n", strings.Repeat(" ", 8), lo, strings.Repeat(" ", gap), hi)
	return b.String()
}
