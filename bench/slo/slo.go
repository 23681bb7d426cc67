package slo

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/bench/slo/harness"
	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/inference"
	"github.com/tierflow/tierflow/runtime/modelzoo"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// builtinTrace is Jellyfish's synthetic trace scaled to 28x28 frames at 15
// a second (examples/traces/synthetic.csv): a full-size float32 frame is
// about 3.6 KB on the wire, 15 of them 430 kbit/s, more than the 400 and
// 300 kbit/s steps carry, so the network binds.
const builtinTrace = `t_s,kbit_s
0,800
5,600
10,400
15,300
20,400
25,600
`

type sloOptions struct {
	traces     []string
	random     int
	seed       uint64
	kinds      []string
	clients    int
	workers    int
	slo        time.Duration
	rate       float64
	duration   time.Duration
	policies   []string
	catalog    string
	model      string
	data       string
	workerType string
	analyze    bool
	encode     string
	harness    bool
	simulate   bool
	simSender  string // --sim-sender: blocking or queued
}

// sloSourceRow is one client (source) of a policy's run: EXPLAIN ANALYZE
// per source.
type sloSourceRow struct {
	Trace       string  `json:"trace,omitempty"`
	Policy      string  `json:"policy"`
	Source      string  `json:"source"`
	Requests    int     `json:"requests"`
	SLOMissRate float64 `json:"slo_miss_rate"`
	Late        int     `json:"late"`
	Dropped     int     `json:"dropped"`
	Lost        int     `json:"lost"`
	P50ms       float64 `json:"p50_ms"`
	P90ms       float64 `json:"p90_ms"`
	P99ms       float64 `json:"p99_ms"`
	// Sides are the frames the client's adaptation sent at each side as
	// its link allowed (the engine's adaptive policy; "28:1200 20:310").
	Sides string `json:"sides,omitempty"`
	// Ran are the frames the model call ran on each variant: a frame
	// sent at a smaller side on the variant of that side ("fit-28:900
	// fit-14:300").
	Ran string `json:"ran,omitempty"`
}

// sloSpanRow is a stretch of a source's run with one shaped bandwidth and
// one variant: the bandwidth the trace gave, the mean the acks estimated,
// and the variant and input size its frames were sent at.
type sloSpanRow struct {
	Trace         string  `json:"trace,omitempty"`
	Policy        string  `json:"policy"`
	Source        string  `json:"source"`
	FromS         float64 `json:"from_s"`
	ToS           float64 `json:"to_s"`
	ShapedKbitS   float64 `json:"shaped_kbit_s"`
	EstimateKbitS float64 `json:"estimated_kbit_s"`
	Variant       string  `json:"variant"`
	Input         string  `json:"input,omitempty"`
}

func Command(benv *bench.Env) *cobra.Command {
	o := sloOptions{}
	c := &cobra.Command{
		Use:   "slo",
		Short: "Latency SLOs over shaped links: adaptive (Jellyfish) against static variants; miss rate, accuracy, p50/p99",
		Long: `Runs the engine on an embedded cluster (NATS, coordinator, dataflow workers,
ONNX Runtime) per policy: N edge clients, each a worker in a tier of its own whose
link to the server worker(s) the relay throttles to the bandwidth trace (--trace,
CSV t_s,kbit_s, looping; client i starts i/N of a period into it, as --link-trace
shapes a link), each replaying labelled Fashion-MNIST frames at --rate from a file,
and a query per client classifying them with the catalog's size family
(examples/fashion/sizes.yaml: fit-14, fit-20, fit-28) WITH (LATENCY <= --slo),
for the trace's length (at least 30 s) or --duration. Policies:

  adaptive         the coordinator's Jellyfish policy: each client's variant and
                   input size from its link's bandwidth as the relay's acks
                   measure it, a cut-over at an epoch per change, lazy drop;
                   between re-plans each frame goes at the largest of the
                   variant's and smaller input sizes its link carries in time
  static-smallest  the query's catalog holds that one variant, no policy
  static-middle    (the paper's B_L, B_M, B_H)
  static-largest

Rows: requests sent, slo_miss_rate (late or dropped, 0..1), accuracy (percent
correct among the requests answered in time), p50_ms and p99_ms of the answered
ones, a frame's latency counted from its capture on the client's schedule to its
result at the sink. Without --trace a built-in one steps through 800, 600, 400 and
300 kbit/s. --harness runs the bench's own client/server harness instead
(bench/slo/harness: not the engine).`,
		Example: `  tierflow bench slo
  tierflow bench slo --clients 8 --slo 150ms --trace examples/traces/synthetic.csv --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchSLO(cmd, benv, o)
		},
	}
	fl := c.Flags()
	fl.StringSliceVar(&o.traces, "trace", nil, "bandwidth traces of the client links, each run in turn (CSV t_s,kbit_s; comma-separated or repeated; default: the built-in 800/600/400/300 kbit/s steps unless --random)")
	fl.IntVar(&o.random, "random", 0, "also run this many seeded random traces (--kinds in turn, seeds --seed, --seed+1, ...)")
	fl.Uint64Var(&o.seed, "seed", 1, "first seed of the --random traces")
	fl.StringSliceVar(&o.kinds, "kinds", TraceKinds, "kinds of --random traces: "+strings.Join(TraceKinds, ", "))
	fl.IntVar(&o.clients, "clients", 4, "edge clients, each with its own shaped link")
	fl.IntVar(&o.workers, "workers", 0, "server workers (default: 1 on the engine, where the plan puts the model call on one; 2 in the harness, one variant each)")
	fl.DurationVar(&o.slo, "slo", 100*time.Millisecond, "end-to-end latency SLO of every frame")
	fl.Float64Var(&o.rate, "rate", 15, "frames per second per client")
	fl.DurationVar(&o.duration, "duration", 0, "how long the clients send (default: the trace's length, at least 30s)")
	fl.StringSliceVar(&o.policies, "policy", harness.Policies, "policies to run")
	fl.StringVar(&o.catalog, "zoo", filepath.Join("examples", "fashion", "sizes.yaml"), "catalog of the size family (variants with input_size and latency by batch)")
	fl.StringVar(&o.model, "model", "classify_sized", "the catalog's model")
	fl.StringVar(&o.data, "data", filepath.Join("examples", "fashion", "data"), "directory with the labelled test-{images,labels}-idx*-ubyte.gz frames")
	fl.StringVar(&o.encode, "encode", "float32", "--harness: how clients put pixels on the link, float32 or uint8 (a quarter of the bytes; on the engine: SET planner.adapt_inputs)")
	fl.BoolVar(&o.analyze, "analyze", false, "EXPLAIN ANALYZE per source: bandwidth shaped vs estimated, variant and input size over time, frames sent at each size, latency percentiles, miss rate")
	fl.StringVar(&o.workerType, "worker-type", "x2", "the latency profile (latency_ms.<type>.by_batch) to schedule with")
	fl.BoolVar(&o.simulate, "simulate", false, "judge the adaptive policy's side rule in virtual time over the oracle's link model instead of running the engine: seconds for many traces, none of the host's load in the numbers")
	fl.StringVar(&o.simSender, "sim-sender", "blocking", "--simulate: the link's sender, blocking (the relay's shaped sender: a batch is decided once the link has carried the one before) or queued (a real link's: decided at capture, queued on the wire)")
	fl.BoolVar(&o.harness, "harness", false, "run the bench's own client/server harness (bench/slo/harness: per-client variants, source-side resize, an EDF queue) instead of the engine")
	return c
}

func runBenchSLO(cmd *cobra.Command, benv *bench.Env, o sloOptions) error {
	if o.workers == 0 {
		o.workers = 1
		if o.harness {
			o.workers = 2
		}
	}
	if o.clients < 1 || o.workers < 1 || o.rate <= 0 || o.slo <= 0 || o.duration < 0 {
		return cli.BadInput(errors.New("--clients and --workers must be at least 1, --rate and --slo positive"))
	}
	if benv.G().Format != "" && benv.G().Format != "table" && benv.G().Format != "json" {
		return cli.BadInput(fmt.Errorf("unknown --format %q: want table or json", benv.G().Format))
	}
	if o.encode != "float32" && o.encode != "uint8" {
		return cli.BadInput(fmt.Errorf("unknown --encode %q: want float32 or uint8", o.encode))
	}
	if o.simSender != "blocking" && o.simSender != "queued" {
		return cli.BadInput(fmt.Errorf("unknown --sim-sender %q: want blocking or queued", o.simSender))
	}
	for _, p := range o.policies {
		if !containsStr(harness.Policies, p) {
			return cli.BadInput(fmt.Errorf("unknown --policy %q: want %s", p, strings.Join(harness.Policies, ", ")))
		}
	}
	trs, err := sloTraces(o)
	if err != nil {
		return cli.BadInput(err)
	}
	if o.simulate {
		return runBenchSLOSimulated(benv, o, trs)
	}
	if !o.harness {
		return runBenchSLOEngine(cmd, benv, o, trs)
	}
	if len(trs) != 1 {
		return cli.BadInput(errors.New("--harness runs one trace: give one --trace and no --random"))
	}
	tr := trs[0]
	variants, err := sloVariants(o)
	if err != nil {
		return cli.BadInput(err)
	}
	imgs, err := modelzoo.ReadIDXFile(filepath.Join(o.data, "test-images-idx3-ubyte.gz"))
	if err != nil {
		return cli.BadInput(err)
	}
	labels, err := modelzoo.ReadIDXFile(filepath.Join(o.data, "test-labels-idx1-ubyte.gz"))
	if err != nil {
		return cli.BadInput(err)
	}
	env, err := onnx.Open(benv.G().ORTLib)
	if err != nil {
		return err
	}
	var rows []*harness.Result
	var sources []sloSourceRow
	var spans []sloSpanRow
	for _, p := range o.policies {
		fmt.Fprintf(benv.Err, "-- %s: %d clients, %s, %.0f frames/s, %s\n", p, o.clients, o.slo, o.rate, tr.Name)
		var timeline []harness.TimelineRow
		var record func(harness.TimelineRow)
		if o.analyze {
			var mu sync.Mutex
			record = func(r harness.TimelineRow) { mu.Lock(); timeline = append(timeline, r); mu.Unlock() }
		}
		res, err := harness.Run(cmd.Context(), harness.Config{Policy: p, Clients: o.clients, Workers: o.workers, SLO: o.slo, Rate: o.rate,
			Trace: tr, Duration: o.duration, Variants: variants, Images: imgs.Floats(), Labels: labels.Data, Env: env, Timeline: record, Uint8: o.encode == "uint8"})
		if err != nil {
			if errors.Is(err, harness.ErrConfig) {
				return cli.BadInput(err)
			}
			return err
		}
		rows = append(rows, res)
		if o.analyze {
			sources = append(sources, sourceRows(res)...)
			spans = append(spans, spanRows(p, timeline)...)
		}
	}
	return printSLO(benv, o, rows, sources, spans)
}

// printSLO prints the policies' rows, and with --analyze the per-source
// EXPLAIN ANALYZE and the bandwidth and variant over time.
func printSLO(benv *bench.Env, o sloOptions, rows []*harness.Result, sources []sloSourceRow, spans []sloSpanRow) error {
	if !o.analyze {
		return benv.PrintRows(rows)
	}
	if benv.G().Format == "json" {
		return cli.PrintRows(benv.Out, "json", map[string]any{"policies": rows, "sources": sources, "timeline": spans})
	}
	for _, part := range []struct {
		title string
		rows  any
	}{{"", rows}, {"\nEXPLAIN ANALYZE per source:", sources}, {"\nBandwidth and variant over time, per source:", spans}} {
		if part.title != "" {
			fmt.Fprintln(benv.Out, part.title)
		}
		if err := benv.PrintRows(part.rows); err != nil {
			return err
		}
	}
	return nil
}

// sloTraces are the traces to run: the files given, then the --random
// ones; the built-in one when there are none.
func sloTraces(o sloOptions) ([]*relay.Trace, error) {
	var out []*relay.Trace
	for _, f := range o.traces {
		tr, err := relay.ReadTrace(f)
		if err != nil {
			return nil, err
		}
		out = append(out, tr)
	}
	if o.random < 0 {
		return nil, errors.New("--random must not be negative")
	}
	if o.random > 0 && len(o.kinds) == 0 {
		return nil, errors.New("--random needs at least one of --kinds")
	}
	for i := 0; i < o.random; i++ {
		tr, err := GenerateTrace(o.kinds[i%len(o.kinds)], o.seed+uint64(i), 30*time.Second)
		if err != nil {
			return nil, fmt.Errorf("--kinds: %w", err)
		}
		out = append(out, tr)
	}
	if len(out) == 0 {
		tr, err := relay.ParseTrace("built-in trace", strings.NewReader(builtinTrace))
		if err != nil {
			return nil, err
		}
		out = append(out, tr)
	}
	return out, nil
}

// runBenchSLOEngine runs every policy as a query on a fresh embedded
// cluster (cmd_bench_slo_engine.go), trace after trace, and judges each
// trace's adaptive run against the static runs and the oracle's bounds.
func runBenchSLOEngine(cmd *cobra.Command, benv *bench.Env, o sloOptions, trs []*relay.Trace) error {
	if o.encode != "float32" {
		return cli.BadInput(errors.New("--encode uint8 is the harness's (--harness): the engine's streams carry float32 tensors"))
	}
	variants, err := sloVariants(o)
	if err != nil {
		return cli.BadInput(err)
	}
	var all []sloPolicyRow
	var bounds []sloBoundRow
	var verdicts []sloVerdictRow
	var sources []sloSourceRow
	var spans []sloSpanRow
	for k, tr := range trs {
		fmt.Fprintf(benv.Err, "-- trace %d of %d: %s\n", k+1, len(trs), tr.Name)
		rows, src, sp, err := runSLOTrace(cmd, benv, o, tr)
		if err != nil {
			return err
		}
		b, v := judge(o, tr, variants, rows)
		for _, r := range rows {
			all = append(all, policyRow(tr.Name, r))
		}
		bounds, verdicts = append(bounds, b...), append(verdicts, v)
		sources, spans = append(sources, src...), append(spans, sp...)
	}
	return printSLOEngine(benv, o, all, bounds, verdicts, sources, spans)
}

// runSLOTrace runs every policy on one trace.
func runSLOTrace(cmd *cobra.Command, benv *bench.Env, o sloOptions, tr *relay.Trace) ([]*harness.Result, []sloSourceRow, []sloSpanRow, error) {
	var rows []*harness.Result
	var sources []sloSourceRow
	var spans []sloSpanRow
	for _, p := range o.policies {
		fmt.Fprintf(benv.Err, "-- %s: %d clients, %s, %.0f frames/s, %s (engine)\n", p, o.clients, o.slo, o.rate, tr.Name)
		run, err := benchSLOEngine(cmd.Context(), benv, o, tr, p)
		if err != nil {
			if errors.Is(err, harness.ErrConfig) {
				return nil, nil, nil, cli.BadInput(err)
			}
			return nil, nil, nil, fmt.Errorf("%s: %w", p, err)
		}
		dropped, replans := map[string]int64{}, 0
		var seen, late int64
		for _, q := range run.summaries {
			if q.SLOMissRate != nil {
				seen += q.RowsOut + q.Dropped["deadline"]
				late += int64(*q.SLOMissRate*float64(q.RowsOut+q.Dropped["deadline"]) + 0.5)
			}
			for k, v := range q.Dropped {
				if v > 0 {
					dropped[k] += v
				}
			}
			replans += len(q.Replans)
			spans = append(spans, timelineSpans(p, q.SLOTimeline)...)
		}
		own := "-"
		if seen > 0 {
			own = fmt.Sprintf("%.4f", float64(late)/float64(seen))
		}
		// The engine's own miss rate counts from the ingest stamps (a frame
		// that waited at its source for the link is stamped late); the row
		// counts from each frame's capture.
		fmt.Fprintf(benv.Err, "-- %s: dropped %v, replans %d (streams paused %.1fs by cut-overs), the engine's own slo_miss_rate %s\n",
			p, dropped, replans, run.paused.Seconds(), own)
		if line := cutLine(run.cuts); line != "" {
			fmt.Fprintf(benv.Err, "-- %s: %s\n", p, line)
		}
		rows = append(rows, run.row)
		for _, r := range run.sources {
			r.Trace = tr.Name
			sources = append(sources, r)
		}
	}
	for i := range spans {
		spans[i].Trace = tr.Name
	}
	return rows, sources, spans, nil
}

// cutLine says where the cut-overs' pauses went, on average: the frames
// sent again from the committed epoch, the coordinator's steps and the new
// plan's first frame (sloCut).
func cutLine(cuts []sloCut) string {
	if len(cuts) == 0 {
		return ""
	}
	var lag, pause, first time.Duration
	var c control.CutOver
	for _, x := range cuts {
		lag += x.commitLag
		pause += x.pause
		first += x.firstFrame
		c.PlanMs += x.cut.PlanMs
		c.DeployMs += x.cut.DeployMs
		c.StopMs += x.cut.StopMs
		c.BuildMs += x.cut.BuildMs
		c.StartMs += x.cut.StartMs
	}
	n := float64(len(cuts))
	msOf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
	return fmt.Sprintf("a cut-over's pause, mean of %d: %.0f ms = committed epoch behind the decision %.0f ms + decision to start %.0f ms "+
		"(plan %.0f, older parts stopped %.0f, new parts deployed %.0f, of it built %.0f) + start to first frame %.0f ms",
		len(cuts), msOf(pause), msOf(lag), c.StartMs/n, c.PlanMs/n, c.StopMs/n, c.DeployMs/n, c.BuildMs/n, msOf(first))
}

// timelineSpans folds the engine's SLO timeline into stretches of one
// shaped bandwidth and one variant per source.
func timelineSpans(policy string, tl []control.SLOSample) []sloSpanRow {
	sort.SliceStable(tl, func(i, j int) bool { return tl[i].Source < tl[j].Source })
	var out []sloSpanRow
	var n int
	var sum float64
	for k, r := range tl {
		if len(out) > 0 {
			last := &out[len(out)-1]
			if last.Source == r.Source && last.ShapedKbitS == r.ShapedKbit && last.Variant == r.Variants {
				last.ToS = round2(r.AtS)
				n++
				sum += r.EstimatedKbit
				last.EstimateKbitS = round2(sum / float64(n))
				continue
			}
		}
		from := 0.0
		if k > 0 && tl[k-1].Source == r.Source {
			from = round2(tl[k-1].AtS)
		}
		n, sum = 1, r.EstimatedKbit
		out = append(out, sloSpanRow{Policy: policy, Source: r.Source, FromS: from, ToS: round2(r.AtS), ShapedKbitS: r.ShapedKbit,
			EstimateKbitS: round2(r.EstimatedKbit), Variant: r.Variants})
	}
	return out
}

func sourceRows(res *harness.Result) []sloSourceRow {
	var out []sloSourceRow
	for i, c := range res.PerClient {
		lats := append([]float64(nil), c.Latencies...)
		sort.Float64s(lats)
		late := c.Missed - c.Dropped - c.Lost
		r := sloSourceRow{Policy: res.Policy, Source: fmt.Sprintf("client-%d", i), Requests: c.Requests, Late: late, Dropped: c.Dropped, Lost: c.Lost,
			P50ms: round2(harness.Percentile(lats, 0.5)), P90ms: round2(harness.Percentile(lats, 0.9)), P99ms: round2(harness.Percentile(lats, 0.99))}
		if c.Requests > 0 {
			r.SLOMissRate = float64(int64(10000*float64(c.Missed)/float64(c.Requests)+0.5)) / 10000
		}
		out = append(out, r)
	}
	return out
}

// spanRows folds a timeline into stretches of one shaped bandwidth and one
// variant per source.
func spanRows(policy string, tl []harness.TimelineRow) []sloSpanRow {
	sort.SliceStable(tl, func(i, j int) bool { return tl[i].Client < tl[j].Client })
	var out []sloSpanRow
	var n int
	var sum float64
	for k, r := range tl {
		src := fmt.Sprintf("client-%d", r.Client)
		if len(out) > 0 {
			last := &out[len(out)-1]
			if last.Source == src && last.ShapedKbitS == r.ShapedKbit && last.Variant == r.Variant {
				last.ToS = round2(r.AtS)
				n++
				sum += r.EstimateKbit
				last.EstimateKbitS = round2(sum / float64(n))
				continue
			}
		}
		from := 0.0
		if k > 0 && tl[k-1].Client == r.Client {
			from = round2(tl[k-1].AtS)
		}
		n, sum = 1, r.EstimateKbit
		out = append(out, sloSpanRow{Policy: policy, Source: src, FromS: from, ToS: round2(r.AtS), ShapedKbitS: r.ShapedKbit,
			EstimateKbitS: round2(r.EstimateKbit), Variant: r.Variant, Input: fmt.Sprintf("%dx%d", r.Side, r.Side)})
	}
	return out
}

func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }

// sloVariants reads the size family from the catalog, smallest input
// first, with each variant's latency by batch 1..64 at P90 (interpolated
// between the profiled sizes, made non-decreasing: the scheduler assumes a
// bigger batch never runs faster, as Jellyfish's estimator does).
func sloVariants(o sloOptions) ([]harness.Variant, error) {
	cat, err := catalog.LoadFile(o.catalog)
	if err != nil {
		return nil, err
	}
	m := cat.Model(o.model)
	if m == nil {
		return nil, fmt.Errorf("%s: no model %q", o.catalog, o.model)
	}
	var out []harness.Variant
	for _, v := range m.Variants {
		if len(v.InputSize) != 2 || v.InputSize[0] != v.InputSize[1] {
			return nil, fmt.Errorf("%s: variant %s has no square input_size", o.catalog, v.Name)
		}
		l, ok := v.Latency[o.workerType]
		if !ok || len(l.ByBatch) == 0 {
			return nil, fmt.Errorf("%s: variant %s has no latency_ms.%s.by_batch (tierflow profile measures it)", o.catalog, v.Name, o.workerType)
		}
		path, err := inference.ModelFile(v, filepath.Dir(o.catalog))
		if err != nil {
			return nil, err
		}
		sv := harness.Variant{Name: v.Name, Path: path, Side: v.InputSize[0], Accuracy: v.Accuracy / 100}
		for b := 1; b <= 64; b++ {
			x := l.BatchMs(b, 90)
			if b > 1 {
				x = max(x, sv.BatchMs[b-2])
			}
			sv.BatchMs = append(sv.BatchMs, x)
		}
		out = append(out, sv)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Side < out[j].Side })
	return out, nil
}

func containsStr(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
