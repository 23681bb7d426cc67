package slo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	rtpolicy "github.com/tierflow/tierflow/runtime/policy"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/bench/slo/harness"
	"github.com/tierflow/tierflow/examples/fashion"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// The engine's bench: every policy runs on a fresh embedded cluster
// (NATS, coordinator, dataflow workers, ONNX Runtime). Client i is a
// worker of its own tier cam<i> whose only uplink, to the server tier,
// the relay throttles to the trace i/N of a period ahead (the same
// relay.TraceShaper that `run --link-trace` installs); its frames are a
// FROM FILE stream replayed at --rate, and a query per client classifies
// them WITH (LATENCY <= slo), all the clients' queries at once. A query
// per client gives each client its own model call, so the policy picks
// each one's variant from its own link (a UNION ALL of the clients'
// streams gets the same from rewrite.SplitCallsBySource, but a re-plan
// cuts over the whole query; here it cuts over its own client's). adaptive
// runs the catalog's whole size family under the coordinator's Jellyfish
// policy; a static policy's catalog holds its one variant and the policy
// is off (the adapt step still sends the frames at that variant's input
// size, planner.adapt_inputs). Under adaptive the adapt step also picks
// each frame's size, up to the running variant's, from its link between
// re-plans (operators/ml Adapt.WithSides).

// sloEngineRun is what one policy's run measured.
type sloEngineRun struct {
	row       *harness.Result
	summaries []control.Summary // per client's query
	paused    time.Duration     // the cut-overs' pauses of the streams, summed
	sources   []sloSourceRow
	cuts      []sloCut
}

// sloCut is where one cut-over's pause of its stream went: the frames
// the new plan sends again (from the committed epoch up to where the old
// plan's schedule was at the decision: commitLag), the coordinator's
// steps (control.CutOver), and the new plan's start until its source sent
// its first frame (firstFrame). pause is the score's.
type sloCut struct {
	commitLag, firstFrame, pause time.Duration
	cut                          control.CutOver
}

// cutsOf lines a client's re-plans up with the schedules score found
// (sc.starts: the first generation's, then one per cut, in cutIDs order).
func cutsOf(s control.Summary, sc sloScore, rate float64) []sloCut {
	at := func(id int64) time.Duration { return time.Duration(float64(id) / rate * float64(time.Second)) }
	ids := cutIDs(s)
	var out []sloCut
	for _, r := range s.Replans {
		if r.Cut == nil {
			continue
		}
		id := int64(r.Epoch) - fashion.StreamEpoch.UnixMicro()
		id = id/fashion.StreamInterval.Microseconds() + 1
		g := sort.Search(len(ids), func(i int) bool { return ids[i] >= id }) + 1
		if g >= len(sc.starts) || sc.starts[g].IsZero() || sc.starts[g-1].IsZero() {
			continue
		}
		prev := int64(0)
		if g >= 2 {
			prev = ids[g-2]
		}
		due := sc.starts[g-1].Add(at(id - prev)) // the cut's first frame on the old schedule
		out = append(out, sloCut{commitLag: r.Cut.Decided.Sub(due), cut: *r.Cut,
			firstFrame: sc.starts[g].Sub(r.Cut.Decided.Add(time.Duration(r.Cut.StartMs * float64(time.Millisecond)))),
			pause:      max(0, sc.starts[g].Sub(due))})
	}
	return out
}

// sloAnswer is a frame's answer as a sink wrote it: when its batch
// entered the query (ingest), when the sink wrote it, and whether the
// model was right.
type sloAnswer struct {
	ingest, written time.Time
	correct         bool
}

// sloScore tallies the answers of one source: a sink batch has one ingest
// stamp, so one latency for all its rows.
type sloScore struct {
	requests    int
	answered    int
	inTime      int
	correct     int // among inTime
	latenciesMs []float64
	// starts are the schedules' starts: the first plan's, then one per cut.
	starts []time.Time
}

// score judges a client's answers by frame id. A frame's latency counts
// from its capture on the client's schedule, not from its batch's ingest
// stamp: a source held back by its slow link (the relay's credit flow
// control) stamps a frame when it gets to send it, after the frame has
// waited. The schedule is the replayed stream's: frame id is captured at
// start + id/rate, start anchored by the frame that was least behind it.
//
// A re-plan cuts the query over at an epoch: the new plan's source
// replays the file from that epoch at its RATE from the cut-over on, and
// a frame the old plan had answered may be answered again. So frames
// from each cut-over's first id (cuts, ascending) on run on a schedule
// of their own, and a frame's last answer is the one that counts (the
// one the committed result holds). The pause a cut-over puts in the
// stream is in no frame's latency; paused returns it.
func score(answers map[int64]sloAnswer, frames int, rate float64, slo time.Duration, cuts []int64) (sc sloScore, paused time.Duration) {
	sc.requests = frames
	at := func(id int64) time.Duration { return time.Duration(float64(id) / rate * float64(time.Second)) }
	gen := func(id int64) int {
		g := 0
		for g < len(cuts) && id >= cuts[g] {
			g++
		}
		return g
	}
	first := func(g int) int64 {
		if g == 0 {
			return 0
		}
		return cuts[g-1]
	}
	// A frame of a later plan the new plan did not answer (it dropped it)
	// may keep the old plan's answer, which the client never wrote (it
	// keeps the committed epochs' rows, and that epoch was the new
	// plan's): an answer sent StaleGap or more ahead of its plan's usual
	// place on the schedule (the median; a cut-over pauses the stream for
	// longer) is the old plan's, and the frame is unanswered.
	offs := make([][]time.Duration, len(cuts)+1)
	base := time.Time{}
	for _, a := range answers {
		if base.IsZero() || a.ingest.Before(base) {
			base = a.ingest
		}
	}
	off := func(id int64, a sloAnswer) time.Duration { return a.ingest.Sub(base) - at(id-first(gen(id))) }
	for id, a := range answers {
		offs[gen(id)] = append(offs[gen(id)], off(id, a))
	}
	med := make([]time.Duration, len(offs))
	for g, o := range offs {
		if len(o) > 0 {
			sort.Slice(o, func(i, j int) bool { return o[i] < o[j] })
			med[g] = o[len(o)/2]
		}
	}
	stale := func(id int64, a sloAnswer) bool { g := gen(id); return g > 0 && off(id, a) < med[g]-staleGap }
	starts := make([]time.Time, len(cuts)+1)
	for id, a := range answers {
		if stale(id, a) {
			continue
		}
		g := gen(id)
		if c := a.ingest.Add(-at(id - first(g))); starts[g].IsZero() || c.Before(starts[g]) {
			starts[g] = c
		}
	}
	sc.starts = starts
	for g := 1; g < len(starts); g++ {
		if !starts[g].IsZero() && !starts[g-1].IsZero() {
			paused += max(0, starts[g].Sub(starts[g-1].Add(at(first(g)-first(g-1)))))
		}
	}
	for id, a := range answers {
		if id < 0 || id >= int64(frames) || stale(id, a) {
			continue
		}
		g := gen(id)
		d := a.written.Sub(starts[g].Add(at(id - first(g))))
		sc.answered++
		sc.latenciesMs = append(sc.latenciesMs, float64(d)/float64(time.Millisecond))
		if d <= slo {
			sc.inTime++
			if a.correct {
				sc.correct++
			}
		}
	}
	return sc, paused
}

// staleGap is how far ahead of its plan's schedule an answer must have
// been sent to be an older plan's (score).
const staleGap = 200 * time.Millisecond

// cutIDs are the first frame ids of a query's re-plans. A re-plan's epoch
// is the committed one, the old plan's last: the new plan's source sends
// the frames after it (an epoch is a frame's event time,
// fashion.WriteStream's ts).
func cutIDs(s control.Summary) []int64 {
	var ids []int64
	step := fashion.StreamInterval.Microseconds()
	for _, r := range s.Replans {
		us := int64(r.Epoch) - fashion.StreamEpoch.UnixMicro()
		ids = append(ids, us/step+1)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func benchSLOEngine(ctx context.Context, benv *bench.Env, o sloOptions, tr *relay.Trace, policy string) (*sloEngineRun, error) {
	cat, err := catalog.LoadFile(o.catalog)
	if err != nil {
		return nil, err
	}
	m := cat.Model(o.model)
	if m == nil {
		return nil, fmt.Errorf("%s: no model %q: %w", o.catalog, o.model, harness.ErrConfig)
	}
	variants := append([]*catalog.Variant(nil), m.Variants...)
	sort.SliceStable(variants, func(i, j int) bool { return side(variants[i]) < side(variants[j]) })
	switch policy {
	case "static-smallest":
		variants = variants[:1]
	case "static-middle":
		variants = variants[len(variants)/2 : len(variants)/2+1]
	case "static-largest":
		variants = variants[len(variants)-1:]
	}
	dir, err := os.MkdirTemp("", "tierflow-bench-slo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	dur := o.duration
	if dur == 0 {
		dur = tr.Period
		for dur < 30*time.Second {
			dur += tr.Period
		}
	}
	frames := int(o.rate * dur.Seconds())
	sub, err := fashion.LoadSubset(filepath.Dir(o.data))
	if err != nil {
		return nil, fmt.Errorf("--data: %w: %w", err, harness.ErrConfig)
	}
	n := len(sub.Labels)
	for i := 0; i < o.clients; i++ {
		// Client i shows the test set from its own offset on, so the
		// clients' frames differ.
		s := &fashion.Subset{}
		for k := 0; k < frames; k++ {
			j := (i*n/o.clients + k) % n
			s.Images = append(s.Images, sub.Images[j*784:(j+1)*784]...)
			s.Labels = append(s.Labels, sub.Labels[j])
		}
		if err := s.WriteStream(filepath.Join(dir, fmt.Sprintf("cam%d.arrow", i)), 256); err != nil {
			return nil, err
		}
	}
	catPath := filepath.Join(dir, "catalog.yaml")
	if err := os.WriteFile(catPath, []byte(sloEngineCatalog(o, m, variants, filepath.Dir(o.catalog), dir)), 0o644); err != nil {
		return nil, err
	}
	// The plan sees each link at the trace's peak (its nominal capacity):
	// the shaping, not the planner, is what makes the network bind.
	peak := 0.0
	for k := 0; k < 1000; k++ {
		peak = max(peak, tr.KbitAt(time.Duration(k)*tr.Period/1000))
	}
	inf, err := infra.Parse("bench-slo-infra.yaml", []byte(sloEngineInfra(o, peak/1000)))
	if err != nil {
		return nil, err
	}

	answers := make([]map[int64]sloAnswer, o.clients)
	for i := range answers {
		answers[i] = map[int64]sloAnswer{}
	}
	var mu sync.Mutex
	onResult := func(_ string, d time.Duration, rec arrow.Record) {
		now := time.Now()
		cam, id, truth, label := columnStrings(rec, "cam"), columnStrings(rec, "id"), columnStrings(rec, "truth"), columnStrings(rec, "label")
		mu.Lock()
		defer mu.Unlock()
		for r := range cam {
			var i int
			var k int64
			if _, err := fmt.Sscanf(cam[r], "cam%d", &i); err != nil || i < 0 || i >= len(answers) {
				continue
			}
			if _, err := fmt.Sscanf(id[r], "%d", &k); err != nil {
				continue
			}
			answers[i][k] = sloAnswer{ingest: now.Add(-d), written: now, correct: label[r] == truth[r] || classOf(label[r]) == truth[r]}
		}
	}
	start := time.Now()
	offset := func(name string) (time.Duration, bool) {
		var i int
		if _, err := fmt.Sscanf(name, "cam%d", &i); err != nil || i < 0 || i >= o.clients {
			return 0, false
		}
		return time.Duration(i) * tr.Period / time.Duration(o.clients), true
	}
	c, err := cluster.StartEmbeddedHooked(ctx, cluster.Options{Infra: inf, Catalog: catPath, NATS: benv.G().NATS, OrtLib: benv.G().ORTLib,
		Policies: sloEnginePolicies(policy == "adaptive")}, cluster.Hooks{OnResult: onResult,
		Shaper: func(from, to string) relay.Shaper {
			if off, ok := offset(from); ok && from != to {
				return relay.TraceShaper{Trace: tr, Start: start, Offset: off}
			}
			return nil
		}})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// One query per client, all at once: each is its stream's model call
	// under the SLO, so the Jellyfish policy chooses each client's variant
	// from its own link.
	runs := make([]deploy.QueryInfo, o.clients)
	errs := make([]error, o.clients)
	var wg sync.WaitGroup
	for i := 0; i < o.clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			src := sloEngineQuery(o, i)
			runs[i], errs[i] = c.Client().Submit(ctx, deploy.Script{Filename: filepath.Join(dir, fmt.Sprintf("cam%d.sql", i)), Source: src,
				BaseDir: dir, Catalog: catPath, Replay: true}, "", bench.Discard{})
		}(i)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	run := &sloEngineRun{}
	for i, info := range runs {
		if info.State == deploy.StateFailed {
			return nil, fmt.Errorf("cam%d's query failed: %s", i, info.Error)
		}
		s := info.Summary()
		run.summaries = append(run.summaries, s)
	}
	var all sloScore
	ran := map[string]int64{}
	for _, info := range runs {
		for k, n := range info.Sides() {
			if name, ok := strings.CutPrefix(k, ml.RanPrefix); ok {
				ran[name] += n
			}
		}
	}
	for i := range answers {
		sc, paused := score(answers[i], frames, o.rate, o.slo, cutIDs(run.summaries[i]))
		run.paused += paused
		run.cuts = append(run.cuts, cutsOf(run.summaries[i], sc, o.rate)...)
		all.requests += sc.requests
		all.answered += sc.answered
		all.inTime += sc.inTime
		all.correct += sc.correct
		all.latenciesMs = append(all.latenciesMs, sc.latenciesMs...)
		sort.Float64s(sc.latenciesMs)
		r := sloSourceRow{Policy: policy, Source: fmt.Sprintf("cam%d", i), Requests: sc.requests, Late: sc.answered - sc.inTime,
			Dropped: sc.requests - sc.answered, P50ms: round2(harness.Percentile(sc.latenciesMs, 0.5)),
			P90ms: round2(harness.Percentile(sc.latenciesMs, 0.9)), P99ms: round2(harness.Percentile(sc.latenciesMs, 0.99))}
		if sc.requests > 0 {
			r.SLOMissRate = round4(float64(sc.requests-sc.inTime) / float64(sc.requests))
		}
		r.Sides = ml.FormatSides(runs[i].Sides()) // every generation's
		r.Ran = ml.FormatRan(runs[i].Sides())
		run.sources = append(run.sources, r)
	}
	sort.Float64s(all.latenciesMs)
	run.row = &harness.Result{Policy: policy, Clients: o.clients, SLOMs: float64(o.slo) / float64(time.Millisecond), Requests: all.requests,
		P50Ms: round2(harness.Percentile(all.latenciesMs, 0.5)), P99Ms: round2(harness.Percentile(all.latenciesMs, 0.99)), Ran: ran}
	if all.requests > 0 {
		run.row.SLOMissRate = round4(float64(all.requests-all.inTime) / float64(all.requests))
	}
	if all.inTime > 0 {
		run.row.Accuracy = round2(100 * float64(all.correct) / float64(all.inTime))
	}
	return run, nil
}

func side(v *catalog.Variant) int {
	if len(v.InputSize) > 0 {
		return v.InputSize[0]
	}
	return 1 << 30 // no input size: full size, after the sized ones
}

// classOf names a class index the way the frames' true_label does (the
// size family's models answer indexes).
func classOf(s string) string {
	var k int
	if _, err := fmt.Sscanf(s, "%d", &k); err != nil || k < 0 || k >= len(fashion.Labels) {
		return ""
	}
	return fashion.Labels[k]
}

func round4(x float64) float64 { return float64(int64(x*10000+0.5)) / 10000 }

// columnStrings reads a result column as text (nil when absent).
func columnStrings(rec arrow.Record, name string) []string {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) == 0 {
		return make([]string, rec.NumRows())
	}
	col := rec.Column(idx[0])
	out := make([]string, col.Len())
	for i := range out {
		if s, ok := col.(*array.String); ok {
			out[i] = s.Value(i)
		} else {
			out[i] = col.ValueStr(i)
		}
	}
	return out
}

// sloEngineInfra: a tier per client (its one worker cannot run the model,
// so its frames cross its link) and the server tier's --workers workers.
func sloEngineInfra(o sloOptions, mbps float64) string {
	var b strings.Builder
	b.WriteString("tiers:\n")
	for i := 0; i < o.clients; i++ {
		fmt.Fprintf(&b, "  - {name: cam%d}\n", i)
	}
	b.WriteString("  - {name: server}\nworker_types:\n  - {name: camera, vcpus: 1, memory_gb: 1, price: 1}\n")
	fmt.Fprintf(&b, "  - {name: %s, vcpus: 2, memory_gb: 4, price: 1}\nworkers:\n", o.workerType)
	for i := 0; i < o.clients; i++ {
		fmt.Fprintf(&b, "  - {name: cam%d, type: camera, tier: cam%d}\n", i, i)
	}
	fmt.Fprintf(&b, "  - {name: server, type: %s, tier: server, count: %d}\nlinks:\n", o.workerType, o.workers)
	for i := 0; i < o.clients; i++ {
		fmt.Fprintf(&b, "  - {from: cam%d, to: server, cost_per_gb: 0.1, bandwidth_mbps: %g}\n", i, mbps)
	}
	// Cameras do not talk to each other: a price high enough that no plan
	// routes rows between them.
	fmt.Fprintf(&b, "default_link: {cost_per_gb: 100, bandwidth_mbps: %g}\n", mbps)
	return b.String()
}

// sloEngineCatalog is the model with the policy's variants (files by
// absolute path, latency profiles as measured; its label a class index,
// as the size family answers) and a stream per client.
func sloEngineCatalog(o sloOptions, m *catalog.Model, variants []*catalog.Variant, zooDir, dataDir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "models:\n  - name: %s\n    task: %s\n    inputs: [{name: image, type: \"TENSOR(FLOAT, 1, 28, 28)\"}]\n", m.Name, m.Task)
	b.WriteString("    outputs: [{name: label, type: BIGINT}, {name: score, type: FLOAT}]\n    variants:\n")
	lat := func(l catalog.Latency) string {
		return fmt.Sprintf("{p50: %g, p75: %g, p90: %g}", l.P50, l.P75, l.P90)
	}
	for _, v := range variants {
		file := v.File
		if !filepath.IsAbs(file) {
			file, _ = filepath.Abs(filepath.Join(zooDir, file))
		}
		fmt.Fprintf(&b, "      - name: %s\n        file: %q\n        accuracy: %g\n        output_kb: %g\n", v.Name, file, v.Accuracy, v.OutputKB)
		if len(v.InputSize) == 2 {
			fmt.Fprintf(&b, "        input_size: [%d, %d]\n", v.InputSize[0], v.InputSize[1])
		}
		b.WriteString("        latency_ms:\n")
		types := make([]string, 0, len(v.Latency))
		for t := range v.Latency {
			types = append(types, t)
		}
		sort.Strings(types)
		for _, t := range types {
			l := v.Latency[t]
			fmt.Fprintf(&b, "          %s:\n            p50: %g\n            p75: %g\n            p90: %g\n", t, l.P50, l.P75, l.P90)
			if len(l.ByBatch) > 0 {
				b.WriteString("            by_batch:\n")
				sizes := make([]int, 0, len(l.ByBatch))
				for s := range l.ByBatch {
					sizes = append(sizes, s)
				}
				sort.Ints(sizes)
				for _, s := range sizes {
					fmt.Fprintf(&b, "              %d: %s\n", s, lat(l.ByBatch[s]))
				}
			}
		}
	}
	b.WriteString("streams:\n")
	for i := 0; i < o.clients; i++ {
		fmt.Fprintf(&b, `  - {name: cam%d, source: file, subject: %q, format: arrow, tier: cam%d,
     locations: 1, rate: %g, item_kb: 3.1,
     columns: [{name: id, type: BIGINT}, {name: ts, type: TIMESTAMP},
               {name: image, type: "TENSOR(FLOAT, 1, 28, 28)"},
               {name: true_label, type: VARCHAR}, {name: true_group, type: VARCHAR}]}
`, i, filepath.Join(dataDir, fmt.Sprintf("cam%d.arrow", i)), i, o.rate)
	}
	return b.String()
}

// sloEngineQuery classifies client i's frames under the SLO, each row
// naming its client.
func sloEngineQuery(o sloOptions, i int) string {
	return fmt.Sprintf("SELECT 'cam%d' AS cam, s.id AS id, s.true_label AS truth, c.label AS label\nFROM cam%d AS s CROSS JOIN LATERAL %s(s.image) AS c(label, score)\nWITH (LATENCY <= %d MS);\n",
		i, i, o.model, o.slo.Milliseconds())
}

// sloEnginePolicies are the engine's policies for a bench slo run: the
// defaults, with the Jellyfish policy only when it is the one measured.
func sloEnginePolicies(adaptive bool) []rtpolicy.Policy {
	if adaptive {
		return rtpolicy.Defaults()
	}
	return rtpolicy.Without(rtpolicy.Defaults(), rtpolicy.JellyfishName)
}
