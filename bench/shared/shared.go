package shared

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	rtpolicy "github.com/tierflow/tierflow/runtime/policy"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/inference"
	"github.com/tierflow/tierflow/runtime/inference/sched"
	"github.com/tierflow/tierflow/runtime/modelzoo"
)

// sharedModel, sharedStream and sharedTable declare the bench's model (one
// file, so both queries share its session), the real-time stream of
// Fashion-MNIST frames replayed at a rate, and the best-effort archive.
const sharedDecls = `CREATE MODEL wide TASK 'image-classification'
  INPUTS (image TENSOR(FLOAT, 1, 28, 28))
  OUTPUTS (label VARCHAR, score FLOAT)
  VARIANTS (wide FROM 'wide.onnx');
CREATE STREAM frames (id BIGINT, ts TIMESTAMP, image TENSOR(FLOAT, 1, 28, 28), true_label VARCHAR, true_group VARCHAR)
  FROM FILE 'frames.arrow' FORMAT ARROW RATE %g PER SECOND;
CREATE TABLE archive (id BIGINT, ts TIMESTAMP, image TENSOR(FLOAT, 1, 28, 28), true_label VARCHAR, true_group VARCHAR)
  FROM FILE 'archive.arrow' FORMAT ARROW;
`

const sharedRT = `SELECT f.id, c.label FROM frames AS f CROSS JOIN LATERAL wide(f.image) AS c(label, score)
WITH (PRIORITY REALTIME, LATENCY <= %g MS);
`

const sharedBE = `SELECT count(*) AS n FROM archive AS a CROSS JOIN LATERAL wide(a.image) AS c(label, score)
WITH (PRIORITY BEST_EFFORT);
`

// sharedInfra is one 2-vCPU edge box: both queries land on it.
const sharedInfra = `tiers:
  - {name: edge}
worker_types:
  - {name: x2, vcpus: 2, memory_gb: 4, price: 1}
workers:
  - {name: edge, type: x2, tier: edge, count: 1}
`

// sharedRow is one policy's run of `tierflow bench shared`.
type sharedRow struct {
	Round  int     `json:"round"`
	Policy string  `json:"policy"`
	RTP50  float64 `json:"rt_p50_ms"`
	RTP99  float64 `json:"rt_p99_ms"`
	RTMiss float64 `json:"rt_miss_rate"`
	RTRows int     `json:"rt_rows"`
	// RTDropped: real-time rows dropped before compute because they could
	// no longer meet the LATENCY (lazy drop); they count as misses.
	RTDropped  int64   `json:"rt_dropped"`
	BEItems    float64 `json:"be_items_per_s"`
	RTP99Ratio float64 `json:"rt_p99_vs_alone"`
	// RTMissDelta is the miss rate less rt-alone's of the same round (0.01:
	// one point).
	RTMissDelta float64 `json:"rt_miss_vs_alone"`
	BERatio     float64 `json:"be_vs_alone"`
	// RTOrtP99 and RTPostP99 are the p99 of the real-time rows' model run
	// and of the time from its end to the sink (the scheduler's trace);
	// RTBeside the real-time batches a best-effort part was in ONNX
	// Runtime beside, while they waited or ran.
	RTOrtP99  float64 `json:"rt_ort_p99_ms"`
	RTPostP99 float64 `json:"rt_post_p99_ms"`
	RTBeside  int     `json:"rt_beside_be"`
	// LoadAvg is the machine's 1-minute load average when the run ended.
	LoadAvg string `json:"load_avg"`
	// Stat is "" for one round's run, "median of N" for the medians over
	// the rounds (Round 0); Met, on those, says which goals they hold to.
	Stat string `json:"stat,omitempty"`
	Met  string `json:"met,omitempty"`
}

type sharedOptions struct {
	rate, latencyMs  float64
	duration, warmup time.Duration
	beRows, rounds   int
	filters, hidden  int
	images           string
	policies         []string
	spread, jitters  float64
	quantile         float64
	noLearn          bool
}

// The bench's policies: the two alone runs are the baselines.
var sharedPolicies = []string{"rt-alone", "be-alone", sched.NaiveName, sched.DeepQueryName}

func Command(benv *bench.Env) *cobra.Command {
	o := sharedOptions{}
	c := &cobra.Command{
		Use:   "shared",
		Short: "A real-time and a best-effort query on one worker: real-time latency and best-effort throughput per scheduling policy",
		Long: `Runs, on an embedded cluster of one 2-vCPU worker with ONNX Runtime, a
real-time query (PRIORITY REALTIME, LATENCY <= --latency-ms) over Fashion-MNIST
frames replayed at --rate, and a best-effort query (PRIORITY BEST_EFFORT) over an
archive table of --be-rows frames, both calling one model: a CNN of the project's
Fashion-MNIST architecture made by runtime/modelzoo, --filters wide with a
--hidden head, so a batch costs milliseconds. Policies: rt-alone and be-alone
(each query by itself), naive (both, every batch runs as it comes: no
coordination, and the real-time query is placed whatever the load, as before
priorities) and deepquery (the worker's scheduler runs real-time batches first
and sizes best-effort ones to end before the next real-time batch is due).

Per policy: the real-time query's end-to-end latency p50 and p99 (exact, from
every row its sink wrote), the share of rows over LATENCY, and the best-effort
query's model rows per second while the real-time query ran; then p99, miss rate
and throughput against the alone runs of the same round. Each round runs every
policy once, starting one further down the list than the round before; the
verdict is the median over the rounds, with the goals it meets. On stderr, the
scheduler's trace takes the real-time latency apart (before the scheduler, the
wait for a grant, the model run, after it) per policy.`,
		Example: `  tierflow bench shared
  tierflow bench shared --rounds 3 --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.spread < 0 || o.jitters < 0 {
				return cli.BadInput(errors.New("--spread and --jitters must be 0 or more"))
			}
			if o.quantile < 0 || o.quantile > 1 {
				return cli.BadInput(fmt.Errorf("--quantile %g: want 0 to 1", o.quantile))
			}
			if o.rate <= 0 || o.latencyMs <= 0 || o.duration < time.Second || o.warmup < 0 || o.beRows < 100 || o.rounds < 1 || o.filters < 1 || o.hidden < 1 {
				return cli.BadInput(errors.New("--rate and --latency-ms must be positive, --duration at least 1s, --warmup 0 or more, --be-rows at least 100, --rounds, --filters and --hidden at least 1"))
			}
			if benv.G().Format != "" && benv.G().Format != "table" && benv.G().Format != "json" {
				return cli.BadInput(fmt.Errorf("unknown --format %q: want table or json", benv.G().Format))
			}
			for _, p := range o.policies {
				if !slices.Contains(sharedPolicies, p) {
					return cli.BadInput(fmt.Errorf("--policies: unknown policy %q (want %s)", p, strings.Join(sharedPolicies, ", ")))
				}
			}
			if _, err := os.Stat(o.images); err != nil {
				return cli.BadInput(fmt.Errorf("--images: %w", err))
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			rows, err := benchShared(ctx, benv, o)
			if err != nil {
				return err
			}
			if benv.G().Format == "json" {
				return benv.PrintRows(rows)
			}
			return printSharedTables(benv.Out, rows)
		},
	}
	f := c.Flags()
	f.Float64Var(&o.rate, "rate", 20, "frames per second of the real-time stream")
	f.Float64Var(&o.latencyMs, "latency-ms", 50, "LATENCY bound of the real-time query, ms")
	f.DurationVar(&o.duration, "duration", 15*time.Second, "how long the real-time stream plays")
	f.DurationVar(&o.warmup, "warmup", time.Second, "how long the best-effort query runs before the measurement starts")
	f.IntVar(&o.beRows, "be-rows", 200000, "rows of the best-effort archive (enough to outlast the real-time stream)")
	f.IntVar(&o.rounds, "rounds", 3, "rounds of the policies, each policy once a round; the verdict is the median over rounds")
	f.IntVar(&o.filters, "filters", 64, "convolution filters of the bench's CNN")
	f.IntVar(&o.hidden, "hidden", 1024, "hidden units of its head")
	f.Float64Var(&o.spread, "spread", 0, "deepquery: deviations of the run-time correction a best-effort part must fit with (sched.DeepQuery.Spread)")
	f.Float64Var(&o.jitters, "jitters", 0, "deepquery: arrival jitters kept free before a real-time batch (sched.DeepQuery.Jitters)")
	f.Float64Var(&o.quantile, "quantile", sched.NewDeepQuery().Quantile, "deepquery: quantile of recent runs a best-effort part is sized by, 0 for the mean (sched.DeepQuery.Quantile)")
	f.BoolVar(&o.noLearn, "no-learn", false, "deepquery: no margin learned from best-effort parts that overran into real-time batches (sched.DeepQuery.Learn)")
	f.StringSliceVar(&o.policies, "policies", sharedPolicies, "policies to run each round (the ratios need rt-alone and be-alone among them)")
	f.StringVar(&o.images, "images", filepath.Join("examples", "fashion", "data", "shelf.arrow"), "Arrow IPC file of labelled Fashion-MNIST frames")
	return c
}

func benchShared(ctx context.Context, benv *bench.Env, o sharedOptions) ([]sharedRow, error) {
	dir, err := os.MkdirTemp("", "tierflow-bench-shared-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	frames := int(o.rate * o.duration.Seconds())
	if err := writeSharedData(dir, o, frames); err != nil {
		return nil, err
	}
	inf, err := infra.Parse("bench-shared.yaml", []byte(sharedInfra))
	if err != nil {
		return nil, err
	}
	decls := fmt.Sprintf(sharedDecls, o.rate)
	script := func(q string) deploy.Script {
		src := decls + q
		return deploy.Script{Filename: filepath.Join(dir, "query.sql"), Source: src, BaseDir: dir, Replay: true}
	}
	rt, be := script(fmt.Sprintf(sharedRT, o.latencyMs)), script(sharedBE)
	fmt.Fprintf(benv.Err, "bench shared: %d frames at %g/s, LATENCY <= %g ms; archive of %d rows; CNN %d filters, %d hidden\n",
		frames, o.rate, o.latencyMs, o.beRows, o.filters, o.hidden)
	var out []sharedRow
	for round := 1; round <= o.rounds; round++ {
		// Each round runs every policy once, starting one further down the
		// list than the round before: on a machine others load, no policy
		// always runs first (or last) when the load comes and goes.
		var rows []sharedRow
		for i := range o.policies {
			pol := o.policies[(i+round-1)%len(o.policies)]
			row, err := sharedRun(ctx, benv, o, inf, pol, rt, be)
			if err != nil {
				return out, fmt.Errorf("round %d, %s: %w", round, pol, err)
			}
			row.Round = round
			fmt.Fprintf(benv.Err, "bench shared: round %d %-9s rt p50 %.2f p99 %.2f ms, miss %.3f, be %.1f items/s (load average %s)\n",
				round, pol, row.RTP50, row.RTP99, row.RTMiss, row.BEItems, loadAverage())
			rows = append(rows, row)
		}
		out = append(out, againstAlone(rows, o.policies)...)
	}
	return append(out, sharedMedians(out, o.policies)...), nil
}

// sharedRoundCell and sharedVerdictCell are the table format's columns: a
// run of each round, then the medians.
type sharedRoundCell struct {
	Round     int     `json:"round"`
	Policy    string  `json:"policy"`
	RTP50     float64 `json:"rt_p50_ms"`
	RTP99     float64 `json:"rt_p99_ms"`
	RTMiss    float64 `json:"rt_miss"`
	BEItems   float64 `json:"be_items_per_s"`
	P99Ratio  string  `json:"p99_vs_rt_alone"`
	MissDelta string  `json:"miss_vs_rt_alone_points"`
	BERatio   string  `json:"be_vs_be_alone"`
	OrtP99    float64 `json:"rt_ort_p99_ms"`
	PostP99   float64 `json:"rt_post_p99_ms"`
	Beside    int     `json:"rt_batches_beside_be"`
	Load      string  `json:"load_avg"`
}

type sharedVerdictCell struct {
	Policy    string `json:"policy"`
	Over      string `json:"over"`
	P99Ratio  string `json:"p99_vs_rt_alone"`
	MissDelta string `json:"miss_vs_rt_alone_points"`
	BERatio   string `json:"be_vs_be_alone"`
	Met       string `json:"goals_met"`
}

// printSharedTables writes every round's runs, then the verdict: the
// medians over the rounds.
func printSharedTables(w io.Writer, rows []sharedRow) error {
	ratio := func(x float64, ok bool) string {
		if !ok {
			return "-"
		}
		return fmt.Sprintf("%.2f", x)
	}
	points := func(r sharedRow) string { return ratio(100*r.RTMissDelta, r.RTP99Ratio > 0) }
	var rounds []sharedRoundCell
	var verdict []sharedVerdictCell
	for _, r := range rows {
		if r.Round == 0 {
			verdict = append(verdict, sharedVerdictCell{Policy: r.Policy, Over: r.Stat, P99Ratio: ratio(r.RTP99Ratio, r.RTP99Ratio > 0),
				MissDelta: points(r), BERatio: ratio(r.BERatio, r.BERatio > 0), Met: cmp.Or(r.Met, "-")})
			continue
		}
		rounds = append(rounds, sharedRoundCell{Round: r.Round, Policy: r.Policy, RTP50: r.RTP50, RTP99: r.RTP99, RTMiss: r.RTMiss, BEItems: r.BEItems,
			P99Ratio: ratio(r.RTP99Ratio, r.RTP99Ratio > 0), MissDelta: points(r), BERatio: ratio(r.BERatio, r.BERatio > 0),
			OrtP99: r.RTOrtP99, PostP99: r.RTPostP99, Beside: r.RTBeside, Load: r.LoadAvg})
	}
	if err := cli.PrintRows(w, "table", rounds); err != nil {
		return err
	}
	return cli.PrintRows(w, "table", verdict)
}

// againstAlone sets one round's ratios against its alone runs and puts the
// rows in the policies' order.
func againstAlone(rows []sharedRow, policies []string) []sharedRow {
	var alone sharedRow
	var aloneBE float64
	for _, r := range rows {
		switch r.Policy {
		case "rt-alone":
			alone = r
		case "be-alone":
			aloneBE = r.BEItems
		}
	}
	var out []sharedRow
	for _, pol := range policies {
		for _, row := range rows {
			if row.Policy != pol {
				continue
			}
			if alone.RTP99 > 0 && row.RTRows > 0 {
				row.RTP99Ratio = row.RTP99 / alone.RTP99
				row.RTMissDelta = row.RTMiss - alone.RTMiss
			}
			if aloneBE > 0 && row.BEItems > 0 {
				row.BERatio = row.BEItems / aloneBE
			}
			out = append(out, row)
		}
	}
	return out
}

// sharedMedians are one row per policy (round 0) of the medians over the
// rounds of each measure and each ratio to the same round's alone runs:
// the verdict, robust to a round the machine stalled in. Met says which of
// the goals the medians hold to (the real-time p99 within 10% of
// rt-alone, its miss rate within 1 point of it, best-effort throughput at
// half of be-alone or more).
func sharedMedians(rows []sharedRow, policies []string) []sharedRow {
	var out []sharedRow
	for _, pol := range policies {
		var by []sharedRow
		for _, r := range rows {
			if r.Policy == pol && r.Round > 0 {
				by = append(by, r)
			}
		}
		if len(by) == 0 {
			continue
		}
		med := func(f func(sharedRow) float64) float64 {
			xs := make([]float64, len(by))
			for i, r := range by {
				xs[i] = f(r)
			}
			return median(xs)
		}
		m := sharedRow{Policy: pol, Stat: fmt.Sprintf("median of %d", len(by)),
			RTP50: med(func(r sharedRow) float64 { return r.RTP50 }), RTP99: med(func(r sharedRow) float64 { return r.RTP99 }),
			RTMiss: med(func(r sharedRow) float64 { return r.RTMiss }), BEItems: med(func(r sharedRow) float64 { return r.BEItems }),
			RTP99Ratio: med(func(r sharedRow) float64 { return r.RTP99Ratio }), RTMissDelta: med(func(r sharedRow) float64 { return r.RTMissDelta }),
			BERatio: med(func(r sharedRow) float64 { return r.BERatio }), RTOrtP99: med(func(r sharedRow) float64 { return r.RTOrtP99 }),
			RTPostP99: med(func(r sharedRow) float64 { return r.RTPostP99 })}
		if pol != "rt-alone" && pol != "be-alone" && m.RTP99Ratio > 0 && m.BERatio > 0 {
			m.Met = fmt.Sprintf("p99 %s, miss %s, be %s", yesNo(m.RTP99Ratio <= 1.1), yesNo(m.RTMissDelta <= 0.01+1e-9), yesNo(m.BERatio >= 0.5))
		}
		out = append(out, m)
	}
	return out
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

// median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// loadAverage is the machine's 1-minute load average ("?" where /proc has
// none): a shared machine's rounds are read beside it.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// writeSharedData writes the model, the real-time frames (the images file's
// rows, repeated to fill the run) and the archive.
func writeSharedData(dir string, o sharedOptions, frames int) error {
	labels := []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}
	if err := modelzoo.NewCNN(28, o.filters, 5, []int{o.hidden, len(labels)}, labels, 1).Graph("wide").WriteFile(filepath.Join(dir, "wide.onnx")); err != nil {
		return err
	}
	mem := memory.NewGoAllocator()
	d, err := inference.LoadData(o.images, mem)
	if err != nil {
		return cli.BadInput(fmt.Errorf("--images: %w", err))
	}
	defer d.Record.Release()
	for name, n := range map[string]int{"frames.arrow": frames, "archive.arrow": o.beRows} {
		if err := writeRepeated(filepath.Join(dir, name), d.Record, n, mem); err != nil {
			return err
		}
	}
	return nil
}

// writeRepeated writes n rows of rec, from the top again as often as needed,
// in batches of at most 1024 rows.
func writeRepeated(path string, rec arrow.Record, n int, mem memory.Allocator) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(mem))
	if err != nil {
		f.Close()
		return err
	}
	for off := 0; off < n; {
		start := off % int(rec.NumRows())
		k := min(n-off, 1024, int(rec.NumRows())-start)
		s := rec.NewSlice(int64(start), int64(start+k))
		err := w.Write(s)
		s.Release()
		if err != nil {
			w.Close()
			f.Close()
			return err
		}
		off += k
	}
	if err := w.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// sharedRun runs one policy on a fresh cluster: the best-effort query
// first (when the policy runs it), the real-time one once it is under way.
func sharedRun(ctx context.Context, benv *bench.Env, o sharedOptions, inf *infra.Infra, pol string, rt, be deploy.Script) (sharedRow, error) {
	policy := sched.NaiveName
	if pol == sched.DeepQueryName {
		policy = pol
	}
	row := sharedRow{Policy: pol}
	var dq sched.Policy
	if pol == sched.DeepQueryName {
		p := sched.NewDeepQuery()
		p.Spread, p.Jitters = o.spread, o.jitters
		p.Quantile, p.Learn = o.quantile, !o.noLearn
		dq = p
	}
	rtName, beName := coordinator.NewQueryName(), coordinator.NewQueryName()
	var mu sync.Mutex
	var lat []float64
	var sinks []sinkEvent
	var parts []sched.Part
	type mark struct {
		at   time.Time
		rows int64
	}
	var first, last mark
	var c *cluster.Cluster
	beRows := func() int64 {
		for _, s := range c.Workers[0].Scheduler().Stats() {
			if s.Query == beName {
				return s.Rows
			}
		}
		return 0
	}
	onLatency := func(q string, d time.Duration, rows int64) {
		if q != rtName {
			return
		}
		m := mark{time.Now(), beRows()}
		mu.Lock()
		defer mu.Unlock()
		sinks = append(sinks, sinkEvent{at: m.at, d: d, rows: rows})
		for range rows {
			lat = append(lat, float64(d)/float64(time.Millisecond))
		}
		if first.at.IsZero() {
			first = m
		}
		last = m
	}
	var err error
	pols := rtpolicy.Defaults()
	if pol == sched.NaiveName {
		// The naive baseline runs as before priorities existed: no
		// real-time admission.
		pols = rtpolicy.Without(pols, rtpolicy.RealtimeAdmissionName)
	}
	c, err = cluster.StartEmbeddedHooked(ctx, cluster.Options{Infra: inf, NATS: benv.G().NATS, OrtLib: benv.G().ORTLib, Placement: coordinator.PlaceRules,
		Sched: policy, Policies: pols}, cluster.Hooks{SchedPolicy: dq, OnLatency: onLatency})
	if err != nil {
		return row, err
	}
	defer c.Close()
	c.Workers[0].Scheduler().Trace(func(p sched.Part) {
		mu.Lock()
		parts = append(parts, p)
		mu.Unlock()
	})
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	beDone := make(chan error, 1)
	beStart := time.Now()
	// beEnded is the error of a best-effort query that ended while the
	// measurement still needed it: its own failure, or --be-rows too few
	// to outlast the run, said with a count that would at the rate it ran
	// (it printed "...: <nil>" and no table).
	beEnded := func(err error, when string) error {
		if err != nil {
			return fmt.Errorf("the best-effort query failed %s: %w", when, err)
		}
		ran := time.Since(beStart)
		need := float64(o.beRows) / ran.Seconds() * (2*o.warmup + 2*o.duration).Seconds()
		return cli.BadInput(fmt.Errorf("the best-effort query read all %d rows (--be-rows) in %s, %s: "+
			"it must outlast the %s run: raise --be-rows to more than %.0f at that rate", o.beRows, ran.Round(time.Millisecond), when, o.duration, need))
	}
	if pol != "rt-alone" {
		go func() {
			_, err := c.Client().Submit(runCtx, be, beName, bench.Discard{})
			beDone <- err
		}()
		// Under way: the best-effort query has run model batches, then
		// --warmup more.
		deadline := time.Now().Add(2 * time.Minute)
		for beRows() == 0 {
			if time.Now().After(deadline) {
				return row, errors.New("the best-effort query ran no model batch in 2 minutes")
			}
			select {
			case err := <-beDone:
				return row, beEnded(err, "before the run began")
			case <-time.After(20 * time.Millisecond):
			}
		}
		time.Sleep(o.warmup) // the measurement starts after it
	}
	if pol == "be-alone" {
		first = mark{time.Now(), beRows()}
		time.Sleep(o.duration)
		last = mark{time.Now(), beRows()}
	} else {
		info, err := c.Client().Submit(runCtx, rt, rtName, bench.Discard{})
		if err != nil {
			return row, fmt.Errorf("real-time query: %w", err)
		}
		if info.State != deploy.StateFinished {
			return row, fmt.Errorf("real-time query %s: %s", info.State, info.Error)
		}
		row.RTDropped = info.Dropped[dataflow.DropDeadline]
	}
	if pol != "rt-alone" {
		select {
		case err := <-beDone:
			return row, beEnded(err, "before the run ended")
		default:
		}
		_ = c.Client().Stop(ctx, beName, true)
	}
	for _, s := range c.Workers[0].Scheduler().Stats() {
		if s.Batches > 0 {
			fmt.Fprintf(benv.Err, "bench shared: %s %s: %d batches, %d rows, mean wait %.2f ms, busy %.0f%%\n", pol, s.Priority, s.Batches, s.Rows,
				float64(s.Wait)/float64(s.Batches)/1e6, 100*s.Share)
		}
	}
	if p, ok := dq.(*sched.DeepQuery); ok {
		ov := p.Overruns()
		fmt.Fprintf(benv.Err, "bench shared: deepquery: %d best-effort parts, %d ran into a real-time batch (longest overlap %.1f ms), learned margin %.1f ms (at most a quarter period of it is kept free)\n",
			ov.Parts, ov.Overran, float64(ov.Worst)/1e6, float64(p.Learned())/1e6)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sinks) > 0 {
		b := breakdown(parts, sinks, rtName)
		b.print(benv.Err, pol)
		row.RTOrtP99, row.RTPostP99, row.RTBeside = b.p99(func(p rtPath) time.Duration { return p.ort }), b.p99(func(p rtPath) time.Duration { return p.post }), b.beside()
	}
	row.LoadAvg = loadAverage()
	if el := last.at.Sub(first.at).Seconds(); el > 0 && pol != "rt-alone" {
		row.BEItems = float64(last.rows-first.rows) / el
	}
	if len(lat) > 0 {
		row.RTRows = len(lat)
		row.RTP50, row.RTP99 = bench.Percentile(lat, 0.5), bench.Percentile(lat, 0.99)
	}
	if n := int64(len(lat)) + row.RTDropped; n > 0 {
		over := row.RTDropped
		for _, l := range lat {
			if l > o.latencyMs {
				over++
			}
		}
		row.RTMiss = float64(over) / float64(n)
	}
	return row, nil
}

// discard is the bench's result writer: the rows are not its measure.
type discard struct{}

func (discard) Write(arrow.Record) error { return nil }
func (discard) Close() error             { return nil }
