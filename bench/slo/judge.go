package slo

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/bench/slo/harness"
	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/relay"
)

// sloPolicyRow is one policy's run on one trace.
type sloPolicyRow struct {
	Trace       string  `json:"trace"`
	Policy      string  `json:"policy"`
	Clients     int     `json:"clients"`
	SLOMs       float64 `json:"slo_ms"`
	Requests    int     `json:"requests"`
	SLOMissRate float64 `json:"slo_miss_rate"`
	Accuracy    float64 `json:"accuracy"`
	P50Ms       float64 `json:"p50_ms"`
	P99Ms       float64 `json:"p99_ms"`
}

func policyRow(trace string, r *harness.Result) sloPolicyRow {
	return sloPolicyRow{Trace: trace, Policy: r.Policy, Clients: r.Clients, SLOMs: r.SLOMs, Requests: r.Requests, SLOMissRate: r.SLOMissRate,
		Accuracy: r.Accuracy, P50Ms: r.P50Ms, P99Ms: r.P99Ms}
}

// sloBoundRow is one of the oracle's ways to send a trace's frames
// (oracleBounds): each static variant, the best of them in hindsight and
// the per-second best choice in hindsight.
type sloBoundRow struct {
	Trace       string  `json:"trace"`
	Bound       string  `json:"bound"`
	SLOMissRate float64 `json:"slo_miss_rate"`
	Accuracy    float64 `json:"accuracy"`
}

// sloVerdictRow judges a trace's adaptive run: it keeps the SLO when it
// misses at most MaxMissRate of the frames (or no more than the smallest
// static variant, where even that cannot keep up), and it wins when its
// accuracy is at least the best static run's that kept the SLO. Gap is the
// per-second bound's accuracy less adaptive's.
//
// Both compare AdaptiveByVariant: the frames each variant answered,
// weighed at the accuracy that variant's static run measured on the same
// frames. That is how the bounds weigh them too, and a static run's
// accuracy is its own by definition. AdaptiveAcc, the adaptive run's
// answers scored one by one, differs from it by sampling alone: which of
// 1,800 frames happened to go to which model (a run that splits 1,800
// frames between variants near 87% scores within about +-0.6 points of
// its expectation, one standard deviation).
type sloVerdictRow struct {
	Trace             string  `json:"trace"`
	AdaptiveMiss      float64 `json:"adaptive_miss"`
	AdaptiveAcc       float64 `json:"adaptive_acc"`
	AdaptiveByVariant float64 `json:"adaptive_by_variant"`
	BestStatic        string  `json:"best_static"`
	StaticMiss        float64 `json:"static_miss"`
	StaticAcc         float64 `json:"static_acc"`
	PerSecondAcc      float64 `json:"per_second_acc"`
	Gap               float64 `json:"gap"`
	Verdict           string  `json:"verdict"`
}

// sloFrames is how many frames a client sends on tr: the trace's length,
// looped to at least 30 s, or --duration.
func sloFrames(o sloOptions, tr *relay.Trace) int {
	dur := o.duration
	if dur == 0 {
		dur = tr.Period
		for dur < 30*time.Second {
			dur += tr.Period
		}
	}
	return int(o.rate * dur.Seconds())
}

// staticIndex is the variant a static policy runs (variants smallest
// first), -1 for any other policy.
func staticIndex(policy string, n int) int {
	switch policy {
	case "static-smallest":
		return 0
	case "static-middle":
		return n / 2
	case "static-largest":
		return n - 1
	}
	return -1
}

// judge computes a trace's bounds and its verdict from the policies' runs.
// The oracle weighs each variant at the accuracy its static run measured on
// these frames (the catalog's where it did not run), so that the bounds
// and the runs compare like for like.
func judge(o sloOptions, tr *relay.Trace, variants []harness.Variant, rows []*harness.Result) ([]sloBoundRow, sloVerdictRow) {
	vs := make([]oracleVariant, len(variants))
	for i, v := range variants {
		vs[i] = oracleVariant{Name: v.Name, Side: v.Side, Bytes: float64(v.Side*v.Side*4) + frameOverhead, Accuracy: round2(100 * v.Accuracy)}
		if len(v.BatchMs) > 0 {
			vs[i].ComputeMs = v.BatchMs[0]
		}
	}
	var adaptive *harness.Result
	statics := map[int]*harness.Result{}
	for _, r := range rows {
		if i := staticIndex(r.Policy, len(vs)); i >= 0 {
			statics[i] = r
			if r.SLOMissRate < 1 {
				vs[i].Accuracy = r.Accuracy
			}
		} else if r.Policy == "adaptive" {
			adaptive = r
		}
	}
	static, best, perSecond := oracleBounds(tr, o.clients, sloFrames(o, tr), o.rate, o.slo, vs)
	var out []sloBoundRow
	for _, b := range append(static, best, perSecond) {
		out = append(out, sloBoundRow{Trace: tr.Name, Bound: b.Name, SLOMissRate: b.SLOMissRate, Accuracy: b.Accuracy})
	}
	v := sloVerdictRow{Trace: tr.Name, PerSecondAcc: perSecond.Accuracy, BestStatic: "-", Verdict: "no adaptive run"}
	// The best static run that kept the SLO, measured; the smallest's miss
	// rate is the floor where none did (the oracle's where it did not run).
	floor := static[0].SLOMissRate
	if s, ok := statics[0]; ok {
		floor = s.SLOMissRate
	}
	for i := len(vs) - 1; i >= 0; i-- {
		s, ok := statics[i]
		if ok && s.SLOMissRate <= MaxMissRate && (v.BestStatic == "-" || s.Accuracy > v.StaticAcc) {
			v.BestStatic, v.StaticMiss, v.StaticAcc = s.Policy, s.SLOMissRate, s.Accuracy
		}
	}
	if adaptive == nil {
		return out, v
	}
	v.AdaptiveMiss, v.AdaptiveAcc = adaptive.SLOMissRate, adaptive.Accuracy
	v.AdaptiveByVariant = byVariant(adaptive, vs)
	v.Gap = round2(perSecond.Accuracy - v.AdaptiveByVariant)
	switch {
	case adaptive.SLOMissRate > MaxMissRate && adaptive.SLOMissRate > floor:
		v.Verdict = fmt.Sprintf("FAIL: misses %.2f%% (at most %.0f%%, or the smallest's %.2f%%)", 100*adaptive.SLOMissRate, 100*MaxMissRate, 100*floor)
	case v.BestStatic != "-" && v.AdaptiveByVariant < v.StaticAcc:
		v.Verdict = fmt.Sprintf("FAIL: %.2f points under %s", v.StaticAcc-v.AdaptiveByVariant, v.BestStatic)
	default:
		v.Verdict = "pass"
	}
	return out, v
}

// byVariant is r's accuracy with each frame weighed at the accuracy of the
// variant that answered it (vs: as the static runs measured them): the
// run's measured accuracy where it does not say which answered what, or
// names a variant vs does not know.
func byVariant(r *harness.Result, vs []oracleVariant) float64 {
	var sum, n float64
	for name, k := range r.Ran {
		i := slices.IndexFunc(vs, func(v oracleVariant) bool { return v.Name == name })
		if i < 0 {
			return r.Accuracy
		}
		sum += float64(k) * vs[i].Accuracy
		n += float64(k)
	}
	if n == 0 {
		return r.Accuracy
	}
	return round2(sum / n)
}

// frameOverhead is a frame's bytes on the wire beyond its image (the
// relay's header, the Arrow IPC message, the frame's other columns), as
// the adapt step assumes before its link has carried any.
const frameOverhead = 600

// printSLOEngine prints the runs, the bounds and the verdicts (and with
// --analyze the per-source EXPLAIN ANALYZE and the timeline), and a line
// with the mean gap to the per-second bound and the verdicts' count.
func printSLOEngine(benv *bench.Env, o sloOptions, rows []sloPolicyRow, bounds []sloBoundRow, verdicts []sloVerdictRow, sources []sloSourceRow, spans []sloSpanRow) error {
	if benv.G().Format == "json" {
		out := map[string]any{"policies": rows, "bounds": bounds, "verdicts": verdicts}
		if o.analyze {
			out["sources"], out["timeline"] = sources, spans
		}
		return cli.PrintRows(benv.Out, "json", out)
	}
	parts := []struct {
		title string
		rows  any
	}{{"", rows}, {"\nBounds in hindsight (the oracle: each trace replayed over the links, frames queued in order):", bounds}}
	if o.analyze {
		parts = append(parts, struct {
			title string
			rows  any
		}{"\nEXPLAIN ANALYZE per source:", sources}, struct {
			title string
			rows  any
		}{"\nBandwidth and variant over time, per source:", spans})
	}
	parts = append(parts, struct {
		title string
		rows  any
	}{"\nVerdicts (adaptive against the best static run that missed at most 2%, and the per-second bound):", verdicts})
	for _, part := range parts {
		if part.title != "" {
			fmt.Fprintln(benv.Out, part.title)
		}
		if err := benv.PrintRows(part.rows); err != nil {
			return err
		}
	}
	var gap float64
	var n, pass int
	for _, v := range verdicts {
		if v.Verdict == "no adaptive run" {
			continue
		}
		n++
		gap += v.Gap
		if v.Verdict == "pass" {
			pass++
		}
	}
	if n > 0 {
		fmt.Fprintf(benv.Out, "\n%d of %d traces pass; adaptive is %.2f points under the per-second bound on average\n", pass, n, gap/float64(n))
		if kinds := gapByKind(verdicts); len(kinds) > 1 {
			fmt.Fprintf(benv.Out, "by kind: %s\n", formatKindGaps(kinds))
		}
	}
	return nil
}

// kindGap is the mean gap to the per-second bound over the traces of one
// kind (traceKind) and how many there were.
type kindGap struct {
	Kind   string
	Traces int
	Gap    float64
}

// gapByKind is the mean gap to the per-second bound per kind of trace, in
// TraceKinds' order, then "other" (the --trace files). The bound
// is on the mean over all traces, where kinds that beat the per-second
// bound (a flapping link, whose seconds a per-batch choice splits) offset
// kinds that stay under it (fades, whose onsets no causal rule sees
// coming): the mean alone hides which.
func gapByKind(verdicts []sloVerdictRow) []kindGap {
	sums := map[string]*kindGap{}
	for _, v := range verdicts {
		if v.Verdict == "no adaptive run" {
			continue
		}
		k := traceKind(v.Trace)
		if sums[k] == nil {
			sums[k] = &kindGap{Kind: k}
		}
		sums[k].Traces++
		sums[k].Gap += v.Gap
	}
	var out []kindGap
	for _, k := range append(slices.Clone(TraceKinds), "other") {
		if g := sums[k]; g != nil {
			g.Gap /= float64(g.Traces)
			out = append(out, *g)
		}
	}
	return out
}

// traceKind is the generator's kind of a trace named "<kind>-<seed>"
// (GenerateTrace), else "other".
func traceKind(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return "other"
	}
	if _, err := strconv.ParseUint(name[i+1:], 10, 64); err != nil || !slices.Contains(TraceKinds, name[:i]) {
		return "other"
	}
	return name[:i]
}

// formatKindGaps writes kind gaps as "fades 1.16 (20), steps 0.22 (20)".
func formatKindGaps(kinds []kindGap) string {
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %.2f (%d)", k.Kind, k.Gap, k.Traces)
	}
	return strings.Join(parts, ", ")
}
