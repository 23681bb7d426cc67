package analyze

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/tierflow/tierflow/runtime/control"
)

// Write prints the report as tables: the checks first (what a reader came
// for), then sources, operators, workers and links.
func (r *Report) Write(w io.Writer) error {
	fmt.Fprintf(w, "EXPLAIN ANALYZE %s: %s; data through in %s (the sources' span and the backlog their last rows met), run %s; rates and costs over the former\n",
		r.Query, r.State, r.Span.Round(time.Millisecond), r.Window.Round(time.Millisecond))
	if r.Planner != "" {
		fmt.Fprintf(w, "placed by %s\n", r.Planner)
	}
	dropped := "none"
	if len(r.Dropped) > 0 {
		dropped = r.Dropped.String()
	}
	fmt.Fprintf(w, "dropped: %s\n", dropped)
	if r.Sides != "" {
		fmt.Fprintf(w, "frames sent at each side by the link (every generation): %s\n", r.Sides)
	}
	if r.Ran != "" {
		fmt.Fprintf(w, "rows run on each variant, a smaller side's on its own (every generation): %s\n", r.Ran)
	}
	sections := []struct {
		title  string
		header []string
		rows   [][]string
	}{
		{"checks", []string{"what", "unit", "estimated", "measured", "error", "within", "ok"}, r.checkRows()},
		{"sources", []string{"stream", "tier", "rows", "planned rows/s", "measured rows/s"}, r.sourceRows()},
		{"operators", []string{"id", "operator", "stage", "variant", "device", "tier", "workers", "rows in", "rows out", "est rows/s", "rows/s", "batch ms p50", "p90", "p99", "busy"}, r.operatorRows()},
		{"model batching", []string{"id", "operator", "batches", "rows", "mean rows", "max rows", "target", "cut on size", "on delay", "at end"}, r.batchingRows()},
		{"workers", []string{"worker", "tier", "type", "price/h", "est items/s", "items/s", "busy", "operators"}, r.workerRows()},
		{"links (sender side)", []string{"from", "to", "bytes", "batches", "est MiB/s", "MiB/s", "price/GB", "est cost/h", "cost/h"}, r.linkRows()},
	}
	if rows := r.sidesRows(); len(rows) > 0 {
		sections = append(sections, struct {
			title  string
			header []string
			rows   [][]string
		}{"data adaptation (rows sent at each side; by the link under LATENCY; rows each variant ran)", []string{"id", "operator", "tier", "workers", "sides", "variants ran"}, rows})
	}
	if e := r.Estimates; e != nil && e.Samples > 0 {
		sections = append(sections, struct {
			title  string
			header []string
			rows   [][]string
		}{fmt.Sprintf("live estimates (smoothed, %d samples)", e.Samples),
			[]string{"id", "operator", "in rows/s", "selectivity", "batch rows", "model ms/batch", "queue", "busy"}, estimateRows(*e)})
		if len(e.Links) > 0 {
			sections = append(sections, struct {
				title  string
				header []string
				rows   [][]string
			}{"live link estimates", []string{"link", "from", "to", "MiB/s", "rtt ms", "ack est kbit/s", "shaped kbit/s", "srtt ms"}, linkEstimateRows(*e)})
		}
	}
	if len(r.SLOTimeline) > 0 {
		sections = append(sections, struct {
			title  string
			header []string
			rows   [][]string
		}{"latency SLO by source (a row when the bandwidth or the variant changed)", []string{"t s", "source", "ack est kbit/s", "shaped kbit/s", "variants (input size)"}, sloTimelineRows(r.SLOTimeline)})
	}
	if len(r.Replans) > 0 || len(r.Recoveries) > 0 {
		var rows [][]string
		for _, p := range r.Replans {
			again := ""
			if p.Seconds > 0 {
				again = fmt.Sprintf("%.2f", p.Seconds)
			}
			rows = append(rows, []string{"re-plan", strconv.FormatUint(p.Epoch, 10), p.Reason, p.Old, p.New, again})
		}
		for _, x := range r.Recoveries {
			rows = append(rows, []string{"recovery", strconv.FormatUint(x.Epoch, 10), "lost worker " + x.LostWorker, "", "", fmt.Sprintf("%.2f", x.Seconds)})
		}
		sections = append(sections, struct {
			title  string
			header []string
			rows   [][]string
		}{"plan history", []string{"change", "from epoch", "why", "old plan (variants; operator@workers)", "new plan", "rows again after s"}, rows})
	}
	for _, s := range sections {
		if s.rows == nil && s.title == "model batching" {
			continue // no model call
		}
		fmt.Fprintf(w, "\n%s\n", s.title)
		// Headers as written: units such as MiB/s survive.
		t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
		t.Header(toAny(s.header)...)
		for _, row := range s.rows {
			if err := t.Append(toAny(row)...); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	return nil
}

func estimateRows(e control.Estimates) [][]string {
	var out [][]string
	for _, o := range e.Operators {
		out = append(out, []string{fmt.Sprint(o.OperatorID), o.Operator, fmt.Sprintf("%.4g", o.InputRate), fmt.Sprintf("%.3g", o.Selectivity),
			fmt.Sprintf("%.3g", o.BatchRows), fmt.Sprintf("%.3g", o.ModelMsPerBatch), fmt.Sprintf("%.2g", o.QueueLength), fmt.Sprintf("%.1f%%", 100*o.Busy)})
	}
	return out
}

func linkEstimateRows(e control.Estimates) [][]string {
	var out [][]string
	for _, l := range e.Links {
		out = append(out, []string{fmt.Sprintf("e%d %d->%d", l.Link.Edge, l.Link.Sender, l.Link.Receiver), l.From, l.To,
			fmt.Sprintf("%.4g", l.BandwidthBps/(1<<20)), fmt.Sprintf("%.3g", l.RTTMs),
			kbitOrDash(l.AckBandwidthBps), kbitOrDash(l.ShapedBps), fmt.Sprintf("%.3g", l.SRTTMs)})
	}
	return out
}

// sloTimelineRows are the samples worth reading: a source's first, and
// then each where its variants changed or a bandwidth moved by more than
// 15% since the last row shown.
func sloTimelineRows(ss []control.SLOSample) [][]string {
	last := map[string]control.SLOSample{}
	moved := func(a, b float64) bool { return math.Abs(a-b) > 0.15*math.Max(math.Abs(b), 1) }
	var out [][]string
	for _, s := range ss {
		if p, ok := last[s.Source]; ok && p.Variants == s.Variants && !moved(s.EstimatedKbit, p.EstimatedKbit) && !moved(s.ShapedKbit, p.ShapedKbit) {
			continue
		}
		last[s.Source] = s
		shaped := "-"
		if s.ShapedKbit > 0 {
			shaped = fmt.Sprintf("%.4g", s.ShapedKbit)
		}
		out = append(out, []string{fmt.Sprintf("%.1f", s.AtS), s.Source, fmt.Sprintf("%.4g", s.EstimatedKbit), shaped, s.Variants})
	}
	return out
}

// kbitOrDash prints bytes per second as kbit/s, "-" for none.
func kbitOrDash(bps float64) string {
	if bps <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.4g", bps*8/1000)
}

func (r *Report) checkRows() [][]string {
	var out [][]string
	for _, c := range r.Checks {
		within, ok := "-", "-"
		if c.Tolerance > 0 {
			within = fmt.Sprintf("±%.0f%%", 100*c.Tolerance)
			ok = map[bool]string{true: "yes", false: "NO"}[c.OK]
		}
		errs := "-"
		if c.Error != nil {
			errs = fmt.Sprintf("%+.1f%%", 100**c.Error)
		}
		est := num(c.Estimated)
		if c.Estimated == 0 && c.Error == nil {
			est = "-" // nothing to hold it against (a latency without LATENCY)
		}
		out = append(out, []string{c.What, c.Unit, est, num(c.Measured), errs, within, ok})
	}
	return out
}

func (r *Report) sourceRows() [][]string {
	var out [][]string
	for _, s := range r.Sources {
		planned := num(s.Planned)
		if s.Bounded {
			planned = "- (a table)"
		}
		out = append(out, []string{s.Name, s.Tier, strconv.FormatInt(s.Rows, 10), planned, num(s.Measured)})
	}
	return out
}

func (r *Report) operatorRows() [][]string {
	var out [][]string
	for _, o := range r.Operators {
		est := "-"
		if o.Estimated > 0 {
			est = num(o.Estimated)
		}
		lat := []string{"-", "-", "-"}
		if o.Batches > 0 {
			lat = []string{num(o.P50), num(o.P90), num(o.P99)}
		}
		out = append(out, append([]string{strconv.Itoa(o.ID), o.Name, o.Stage, o.Variant, o.Device, o.Tier, strings.Join(o.Workers, ","),
			strconv.FormatInt(o.RowsIn, 10), strconv.FormatInt(o.RowsOut, 10), est, num(o.Measured)}, append(lat, pct(o.Busy))...))
	}
	return out
}

// sidesRows are the adaptations that picked their side per batch and the
// model calls that ran rows of a smaller side on its variant.
func (r *Report) sidesRows() [][]string {
	var out [][]string
	for _, o := range r.Operators {
		if o.Sides != "" || o.Ran != "" {
			out = append(out, []string{strconv.Itoa(o.ID), o.Name, o.Tier, strings.Join(o.Workers, " "), dash(o.Sides), dash(o.Ran)})
		}
	}
	return out
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (r *Report) batchingRows() [][]string {
	var out [][]string
	for _, o := range r.Operators {
		b := o.Batching
		if b == nil {
			continue
		}
		mean := "-"
		if b.Batches > 0 {
			mean = num(float64(b.Rows) / float64(b.Batches))
		}
		i := func(x int64) string { return strconv.FormatInt(x, 10) }
		out = append(out, []string{i(int64(o.ID)), o.Name, i(b.Batches), i(b.Rows), mean, i(b.MaxRows), i(b.Target), i(b.CutSize), i(b.CutDelay), i(b.CutEnd)})
	}
	return out
}

func (r *Report) workerRows() [][]string {
	var out [][]string
	staged := false
	for _, w := range r.Workers {
		staged = staged || w.Staged
	}
	for _, w := range r.Workers {
		est := "-"
		if w.Estimated > 0 {
			est = num(w.Estimated)
		}
		price := num(w.Price)
		if staged && !w.Staged {
			// Not in the compute cost: it runs no stage of the plan.
			price += " (source only)"
		}
		out = append(out, []string{w.Name, w.Tier, w.Type, price, est, num(w.Measured), pct(w.Busy), strings.Join(w.Operators, ", ")})
	}
	return out
}

func (r *Report) linkRows() [][]string {
	var out [][]string
	for _, l := range r.Links {
		out = append(out, []string{l.From, l.To, strconv.FormatUint(l.Bytes, 10), strconv.FormatUint(l.Batches, 10), num(l.EstimatedMBps), num(l.MeasuredMBps),
			num(l.PricePerGB), num(l.EstimatedCost), num(l.MeasuredCost)})
	}
	return out
}

// num prints four significant digits, without exponents for everyday sizes.
func num(f float64) string {
	switch {
	case f == 0:
		return "0"
	case math.Abs(f) >= 1e6 || math.Abs(f) < 1e-4:
		return strconv.FormatFloat(f, 'g', 4, 64)
	}
	return strconv.FormatFloat(f, 'f', max(0, 3-int(math.Floor(math.Log10(math.Abs(f))))), 64)
}

func pct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
