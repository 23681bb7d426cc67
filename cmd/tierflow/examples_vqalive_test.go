package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	vqalive "github.com/tierflow/tierflow/examples/vqa-live"
	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/planner/physical"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/inference"
	"github.com/tierflow/tierflow/runtime/modelzoo"
	"github.com/tierflow/tierflow/runtime/onnx"
	"github.com/tierflow/tierflow/runtime/ortlib"
)

// vqaLiveDir is examples/vqa-live from the test's directory. The example's
// tests are here, in a test binary that links the engine (and the example)
// anyway, not in one of their own (each test binary is a link of most of the
// engine: make test's CPU).
const vqaLiveDir = "../../examples/vqa-live"

func vqaLiveLoadCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	c, err := catalog.LoadFile(filepath.Join(vqaLiveDir, "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// vqaLiveOrtEnv opens ONNX Runtime; tests that need it skip without the library.
func vqaLiveOrtEnv(t testing.TB) *onnx.Env {
	t.Helper()
	if _, err := ortlib.Find(""); err != nil {
		t.Skipf("no ONNX Runtime library (run scripts/setup.sh): %v", err)
	}
	env, err := onnx.Open("")
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// vqaLiveStreamValues reads a checked-in stream file's tensor column.
func vqaLiveStreamValues(t testing.TB, file, col string, size int) []float32 {
	t.Helper()
	var v []float32
	for _, rec := range readIPCRecords(t, filepath.Join(vqaLiveDir, "data", file)) {
		idx := rec.Schema().FieldIndices(col)
		if len(idx) != 1 {
			t.Fatalf("%s: no column %q", file, col)
		}
		vals, n, err := ml.TensorValues(rec.Column(idx[0]))
		if err != nil || n != size {
			t.Fatalf("%s: column %s: %d values a row, want %d (%v)", file, col, n, size, err)
		}
		v = append(v, vals[:int(rec.NumRows())*size]...)
		rec.Release()
	}
	if len(v) != vqalive.Rows*size {
		t.Fatalf("%s: %d rows, want %d", file, len(v)/size, vqalive.Rows)
	}
	return v
}

// vqaLiveRun calls a session on n rows of each input.
func vqaLiveRun(t testing.TB, s *onnx.Session, n int, inputs ...[]float32) [][]float32 {
	t.Helper()
	in := make([]ml.Tensor, len(inputs))
	for i, x := range inputs {
		shape := append([]int64{int64(n)}, s.Inputs()[i].Shape[1:]...)
		in[i] = ml.Tensor{DType: ml.Float32, Shape: shape, F32: x[:n*int(vqaLiveProduct(shape[1:]))]}
	}
	out := make([]ml.Tensor, len(s.Outputs()))
	if err := s.Run(in, out); err != nil {
		t.Fatal(err)
	}
	res := make([][]float32, len(out))
	for i, o := range out {
		res[i] = o.F32
	}
	return res
}

func vqaLiveProduct(s []int64) int64 {
	p := int64(1)
	for _, d := range s {
		p *= d
	}
	return p
}

// vqaLiveReference evaluates a model file with modelzoo's Go interpreter, which
// shares no code with ONNX Runtime. VQA's Concat is done here: the graph
// after it is evaluated on the joined rows.
func vqaLiveReference(t testing.TB, file string, n int, inputs ...[]float32) []float32 {
	t.Helper()
	g, err := modelzoo.ReadGraph(file)
	if err != nil {
		t.Fatal(err)
	}
	x := inputs[0]
	if len(g.Inputs) == 2 {
		a, b := int(g.Inputs[0].Shape[1].Value), int(g.Inputs[1].Shape[1].Value)
		if g.Nodes[0].OpType != "Concat" {
			t.Fatalf("%s: a two-input model should start with Concat, has %s", file, g.Nodes[0].OpType)
		}
		x = make([]float32, 0, n*(a+b))
		for r := 0; r < n; r++ {
			x = append(append(x, inputs[0][r*a:(r+1)*a]...), inputs[1][r*b:(r+1)*b]...)
		}
		g.Inputs = []modelzoo.ValueInfo{{Name: g.Nodes[0].Outputs[0], Shape: []modelzoo.Dim{{Param: "N"}, {Value: int64(a + b)}}}}
		g.Nodes = g.Nodes[1:]
	}
	y, _, err := modelzoo.Evaluate(g, x, n, g.Outputs[0].Name)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return y
}

func vqaLiveCloseTo(t testing.TB, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-4*math.Max(1, math.Abs(float64(want[i]))) {
			t.Fatalf("%s: value %d is %v, Go reference %v", what, i, got[i], want[i])
		}
	}
}

// TestVQALiveModelsHaveDeclaredShapes opens every variant of the catalog in ONNX
// Runtime, checks its inputs and outputs against the catalog's declared
// types, and checks its outputs on real rows against the Go interpreter of
// the same file. It also checks the variants' cost order: each larger
// variant does more arithmetic than the one before it.
func TestVQALiveModelsHaveDeclaredShapes(t *testing.T) {
	// In-process and untimed: beside the drills, not in this package's
	// serial part (TestVQALiveExplainAnalyzeMeetsPlan, which holds a
	// throughput, stays there).
	t.Parallel()
	env := vqaLiveOrtEnv(t)
	c := vqaLiveLoadCatalog(t)
	images := vqaLiveStreamValues(t, "images.arrow", "image", 784)
	speech := vqaLiveStreamValues(t, "speech.arrow", "speech", vqalive.SpeechWindow)
	const n = 48
	features := map[string][]float32{}
	for _, name := range []string{"ExtractImageFeature", "SpeechRecognition", "VQA"} {
		m := c.Model(name)
		if m == nil || len(m.Variants) < 2 {
			t.Fatalf("catalog model %s: %+v, want at least two variants", name, m)
		}
		prevParams := 0
		for _, v := range m.Variants {
			file := filepath.Join(vqaLiveDir, v.File)
			s, err := env.Session(file, onnx.Options{Device: onnx.CPU, IntraOpThreads: 1})
			if err != nil {
				t.Fatalf("%s/%s: %v", name, v.Name, err)
			}
			if len(s.Inputs()) != len(m.Inputs) {
				t.Fatalf("%s/%s: %d inputs, catalog declares %d", name, v.Name, len(s.Inputs()), len(m.Inputs))
			}
			for i, in := range m.Inputs {
				want := append([]int64{-1}, vqaLiveDims(catalog.TensorShape(in.Type))...)
				if got := s.Inputs()[i]; got.Name != in.Name || !slices.Equal(got.Shape, want) {
					t.Errorf("%s/%s input %d: %s, catalog %s %v", name, v.Name, i, got, in.Name, want)
				}
			}
			if len(s.Outputs()) != 1 {
				t.Fatalf("%s/%s: outputs %v, want one", name, v.Name, s.Outputs())
			}
			out := s.Outputs()[0]
			switch shape := catalog.TensorShape(m.Outputs[0].Type); {
			case shape != nil:
				if !slices.Equal(out.Shape, append([]int64{-1}, vqaLiveDims(shape)...)) {
					t.Errorf("%s/%s output %s, catalog %s", name, v.Name, out, m.Outputs[0].Type)
				}
			default: // answer, score: a class output with the answers as labels
				labels, _ := s.Metadata(ml.LabelsKey)
				if !slices.Equal(out.Shape, []int64{-1, int64(len(vqalive.Answers))}) || labels != strings.Join(vqalive.Answers, ",") {
					t.Errorf("%s/%s output %s, labels %q", name, v.Name, out, labels)
				}
			}
			var args [][]float32
			switch name {
			case "ExtractImageFeature":
				args = [][]float32{images}
			case "SpeechRecognition":
				args = [][]float32{speech}
			default:
				args = [][]float32{features["ExtractImageFeature"], features["SpeechRecognition"]}
			}
			got := vqaLiveRun(t, s, n, args...)[0]
			vqaLiveCloseTo(t, name+"/"+v.Name, got, vqaLiveReference(t, file, n, args...))
			if _, ok := features[name]; !ok {
				features[name] = got
			}
			g, err := modelzoo.ReadGraph(file)
			if err != nil {
				t.Fatal(err)
			}
			p := 0
			for _, in := range g.Initializers {
				p += len(in.Data)
			}
			if name != "ExtractImageFeature" && p <= prevParams {
				t.Errorf("%s/%s: %d weights, not more than the variant before (%d)", name, v.Name, p, prevParams)
			}
			prevParams = p
		}
	}
	// Both inputs matter to the answers: they are not all one class.
	probs := vqaLiveRun(t, vqaLiveMustSession(t, env, filepath.Join(vqaLiveDir, c.Model("VQA").Variants[0].File)), n, features["ExtractImageFeature"], features["SpeechRecognition"])[0]
	seen := map[int]bool{}
	for r := 0; r < n; r++ {
		seen[modelzoo.Argmax(probs[r*len(vqalive.Answers):(r+1)*len(vqalive.Answers)])] = true
	}
	if len(seen) < 3 {
		t.Errorf("VQA gives %d distinct answers on %d requests", len(seen), n)
	}
}

func vqaLiveMustSession(t testing.TB, env *onnx.Env, file string) *onnx.Session {
	t.Helper()
	s, err := env.Session(file, onnx.Options{Device: onnx.CPU, IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func vqaLiveDims(s []int) []int64 {
	out := make([]int64, len(s))
	for i, d := range s {
		out[i] = int64(d)
	}
	return out
}

// TestVQALiveGenerateReproducesCheckedInFiles regenerates every model and stream
// file into a temporary directory and compares bytes with the checked-in
// ones: gen is deterministic and the files are what it writes.
func TestVQALiveGenerateReproducesCheckedInFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	vs, err := vqalive.Generate(filepath.Join("..", ".."), dir)
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"data/images.arrow", "data/speech.arrow"}
	for _, v := range vs {
		files = append(files, "models/"+v.File)
	}
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(vqaLiveDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: regenerated file (%d bytes) differs from the checked-in one (%d bytes): run go run ./examples/vqa-live/gen", f, len(got), len(want))
		}
	}
	// The catalog names exactly the generated variants.
	c := vqaLiveLoadCatalog(t)
	var names []string
	for _, m := range c.Models {
		for _, v := range m.Variants {
			names = append(names, m.Name+"/"+v.Name+"="+v.File)
		}
	}
	var gen []string
	for _, v := range vs {
		gen = append(gen, v.Model+"/"+v.Name+"=models/"+v.File)
	}
	if !slices.Equal(names, gen) {
		t.Errorf("catalog variants %v, gen writes %v", names, gen)
	}
}

// TestVQALiveStreamsMatchOneToOne: both stream files hold requests 0..Rows-1 in
// order with the same event times, 40 a second, in records of vqalive.RecordRows.
func TestVQALiveStreamsMatchOneToOne(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"images.arrow", "speech.arrow"} {
		recs := readIPCRecords(t, filepath.Join(vqaLiveDir, "data", f))
		row := 0
		for _, rec := range recs {
			if rec.NumRows() != vqalive.RecordRows {
				t.Errorf("%s: a record of %d rows, want %d", f, rec.NumRows(), vqalive.RecordRows)
			}
			ids := rec.Column(0).(*array.Int64)
			ts := rec.Column(1).(*array.Timestamp)
			for i := 0; i < int(rec.NumRows()); i++ {
				want := vqalive.StreamEpoch.Add(vqalive.Interval * time.Duration(row))
				if ids.Value(i) != int64(row) || ts.Value(i) != arrow.Timestamp(want.UnixMicro()) {
					t.Fatalf("%s row %d: request %d at %v, want %d at %v", f, row, ids.Value(i), ts.Value(i), row, want)
				}
				row++
			}
			rec.Release()
		}
		if row != vqalive.Rows {
			t.Errorf("%s: %d rows, want %d", f, row, vqalive.Rows)
		}
	}
}

// vqaLivePlan plans query.sql on the example's catalog and infrastructure, as
// `tierflow explain` does.
func vqaLivePlan(t testing.TB) (*physical.Plan, *infra.Infra) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(vqaLiveDir, "query.sql"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := lang.Parse("query.sql", string(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(script.Statements) != 1 {
		t.Fatalf("query.sql has %d statements, want the one query", len(script.Statements))
	}
	inf, err := infra.LoadFile(filepath.Join(vqaLiveDir, "infra.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := planner.PlanStatement(context.Background(), script.Statements[0], vqaLiveLoadCatalog(t), inf, planner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Physical.Feasible {
		t.Fatalf("plan infeasible: %s", res.Physical.Reason)
	}
	return res.Physical, inf
}

// TestVQALivePlanSpansTiers: the optimizer's plan runs the three models on more than
// one tier and sends data over priced links, so its network cost is not zero.
func TestVQALivePlanSpansTiers(t *testing.T) {
	t.Parallel()
	p, _ := vqaLivePlan(t)
	tiers := map[string]bool{}
	models := 0
	for _, op := range p.Operators {
		if op.Kind != "ml" {
			continue
		}
		models++
		for _, w := range op.Workers {
			tiers[w.Tier] = true
		}
	}
	if models != 3 || len(tiers) < 2 {
		t.Errorf("%d models on tiers %v, want 3 models on more than one tier", models, tiers)
	}
	if p.NetworkCost <= 0 || len(p.Links) == 0 {
		t.Errorf("network cost %v over links %v: nothing crosses a priced link", p.NetworkCost, p.Links)
	}
	t.Logf("tiers %v, compute %.4f + network %.4f per hour, links %+v", tiers, p.ComputeCost, p.NetworkCost, p.Links)
}

// TestVQALiveQueryLocalEqualsEmbedded runs query.sql the way `tierflow run --local`
// does (one process, each model's most accurate variant) and on an embedded
// cluster of infra.yaml (NATS between the tiers, the optimizer's variants and
// placement): the answers must be the same rows, the plan's variants the ones
// the local run took, and the bytes each tier link metered within 10% of
// what the plan estimates for the stream (the catalog's item_kb and
// output_kb at the stream's rate, over its length in event time).
func TestVQALiveQueryLocalEqualsEmbedded(t *testing.T) {
	t.Parallel()
	vqaLiveOrtEnv(t)
	dir, src := vqaLiveQuery(t)
	script := deploy.Script{Filename: filepath.Join(dir, "query.sql"), Source: string(src), BaseDir: dir, Catalog: filepath.Join(dir, "catalog.yaml")}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// One process.
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	rt := inference.New(inference.Config{BaseDir: dir})
	var local bytes.Buffer
	q, _, err := script.Build(nil, exec.Options{Allocator: mem, Output: sinks.NewCSV(&local), Lateral: rt.Lateral})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Run(ctx); err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
	if n := strings.Count(local.String(), "\n") - 1; n != vqalive.Rows {
		t.Fatalf("local run: %d answers, want one per request (%d)", n, vqalive.Rows)
	}

	p, inf := vqaLivePlan(t)
	localVariant := map[string]string{}
	for _, c := range rt.Choices() {
		localVariant[c.Model] = c.Variant
	}
	for _, op := range p.Operators {
		if op.Kind == "ml" && localVariant[op.Model] != op.Variant {
			t.Errorf("model %s: the plan runs %s, a local run %s", op.Model, op.Variant, localVariant[op.Model])
		}
	}

	// The embedded cluster.
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: inf, Catalog: script.Catalog, Heartbeat: 200 * time.Millisecond})
	defer c.Close()
	got, info := clustertest.RunCSV(t, ctx, c.Run, script)
	if err := clustertest.SameRows(got, local.String()); err != nil {
		t.Fatal(err)
	}

	// Metered bytes per tier link against the plan's estimate.
	measured := info.TierBytes()
	seconds := float64(vqalive.Rows) * vqalive.Interval.Seconds()
	var estCost, measCost float64
	for _, l := range p.Links {
		key := l.From + "->" + l.To
		est := l.MBps * 1024 * 1024 * seconds
		got := float64(measured[key])
		price := vqaLiveLinkPrice(inf, l.From, l.To)
		estCost += est * price
		measCost += got * price
		if math.Abs(got-est) > 0.10*est {
			t.Errorf("link %s: %.0f bytes metered, the plan estimates %.0f (%.1f%%)", key, got, est, 100*(got-est)/est)
		} else {
			t.Logf("link %s: %.0f bytes metered, estimated %.0f (%+.1f%%), %.2f per GB", key, got, est, 100*(got-est)/est, price)
		}
		delete(measured, key)
	}
	for k, v := range measured {
		t.Errorf("link %s carried %d bytes the plan has no load for", k, v)
	}
	if estCost <= 0 || math.Abs(measCost-estCost) > 0.10*estCost {
		t.Errorf("network cost: metered %.4g, estimated %.4g (price x bytes)", measCost, estCost)
	}
	t.Logf("%d answers; %s; workers %v", info.ResultRows, info.Planner, info.Workers)
}

// vqaLiveLinkPrice is the infrastructure's price per GB between two tiers.
func vqaLiveLinkPrice(inf *infra.Infra, from, to string) float64 {
	for _, l := range inf.Links {
		if l.From == from && l.To == to {
			return l.CostPerGB
		}
	}
	return 0
}

// TestVQALiveExplainAnalyzeMeetsPlan runs the query as EXPLAIN ANALYZE on the
// embedded cluster (its streams replayed at 40 a second, 200 requests, 5 s)
// and holds the run against the plan: achieved throughput within 5% of the
// target and metered network cost within 10% of the estimate.
func TestVQALiveExplainAnalyzeMeetsPlan(t *testing.T) {
	vqaLiveOrtEnv(t)
	dir, src := vqaLiveQuery(t)
	_, inf := vqaLivePlan(t)
	script := deploy.Script{Filename: filepath.Join(dir, "query.sql"), Source: string(src), BaseDir: dir, Catalog: filepath.Join(dir, "catalog.yaml")}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: inf, Catalog: script.Catalog, Heartbeat: 200 * time.Millisecond})
	defer c.Close()
	rep, err := c.ExplainAnalyze(ctx, script, cluster.AnalyzeOptions{MaxRows: 200})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := rep.Write(&text); err != nil {
		t.Fatal(err)
	}
	judged := map[string]bool{}
	for _, ch := range rep.Checks {
		if ch.Tolerance == 0 {
			continue
		}
		judged[ch.What] = true
		if !ch.OK {
			t.Errorf("%s: estimated %.4g %s, measured %.4g (tolerance %.0f%%)", ch.What, ch.Estimated, ch.Unit, ch.Measured, 100*ch.Tolerance)
		} else {
			t.Logf("%s: estimated %.4g %s, measured %.4g", ch.What, ch.Estimated, ch.Unit, ch.Measured)
		}
	}
	if !judged["throughput"] || !judged["network cost"] {
		t.Errorf("the report judges %v, want throughput and network cost", judged)
	}
	for _, s := range rep.Sources {
		if s.Rows != 200 {
			t.Errorf("stream %s: %d rows read, want 200", s.Name, s.Rows)
		}
	}
	if t.Failed() {
		t.Log("\n" + text.String())
	}
}

// vqaLiveQuery is the example's directory, absolute, and its query.sql.
func vqaLiveQuery(t testing.TB) (dir string, src []byte) {
	t.Helper()
	dir, err := filepath.Abs(vqaLiveDir)
	if err != nil {
		t.Fatal(err)
	}
	src, err = os.ReadFile(filepath.Join(dir, "query.sql"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, src
}

// vqaLiveWireKB is what rows of rec cost on a relay link, in KiB per row.
func vqaLiveWireKB(t testing.TB, rec arrow.Record) float64 {
	t.Helper()
	n, err := vqalive.WireBytes(rec, vqalive.QueryIDLen)
	if err != nil {
		t.Fatal(err)
	}
	return float64(n) / float64(rec.NumRows()) / 1024
}

func vqaLiveWithin(t testing.TB, what string, catalogKB, measuredKB, tol float64) {
	t.Helper()
	if math.Abs(catalogKB-measuredKB) > tol*measuredKB {
		t.Errorf("%s: catalog says %.4f KB a row, a relay link carries %.4f (more than %.0f%% apart)", what, catalogKB, measuredKB, 100*tol)
	} else {
		t.Logf("%s: catalog %.4f KB a row, measured %.4f", what, catalogKB, measuredKB)
	}
}

// TestVQALiveCatalogSizesMatchWire: each stream's item_kb is what its rows cost on a
// relay link (header, Arrow IPC batch of vqalive.RecordRows rows, progress frame),
// measured on the stream files; each variant's output_kb is what the rows
// leaving the model cost there (request_id and the model's output columns,
// the message the plan sends), measured on the model's real outputs.
func TestVQALiveCatalogSizesMatchWire(t *testing.T) {
	t.Parallel()
	c := vqaLiveLoadCatalog(t)
	for _, s := range []struct{ stream, file string }{{"ReadImage", "images.arrow"}, {"ReadSpeech", "speech.arrow"}} {
		recs := readIPCRecords(t, filepath.Join(vqaLiveDir, "data", s.file))
		var bytes, rows float64
		for _, rec := range recs {
			bytes += vqaLiveWireKB(t, rec) * float64(rec.NumRows())
			rows += float64(rec.NumRows())
			rec.Release()
		}
		st := c.Stream(s.stream)
		if st == nil {
			t.Fatalf("no stream %s", s.stream)
		}
		vqaLiveWithin(t, s.stream, st.ItemKB, bytes/rows, 0.05)
	}

	env := vqaLiveOrtEnv(t)
	mem := memory.NewGoAllocator()
	images := vqaLiveStreamValues(t, "images.arrow", "image", 784)
	speech := vqaLiveStreamValues(t, "speech.arrow", "speech", vqalive.SpeechWindow)
	feats := map[string][]float32{}
	for _, name := range []string{"ExtractImageFeature", "SpeechRecognition", "VQA"} {
		m := c.Model(name)
		for _, v := range m.Variants {
			args := [][]float32{images}
			switch name {
			case "SpeechRecognition":
				args = [][]float32{speech}
			case "VQA":
				args = [][]float32{feats["ExtractImageFeature"], feats["SpeechRecognition"]}
			}
			out := vqaLiveRun(t, vqaLiveMustSession(t, env, filepath.Join(vqaLiveDir, v.File)), vqalive.RecordRows, args...)[0]
			if _, ok := feats[name]; !ok {
				feats[name] = out
			}
			ids, ts := array.NewInt64Builder(mem), array.NewTimestampBuilder(mem, arrow.FixedWidthTypes.Timestamp_us.(*arrow.TimestampType))
			for i := 0; i < vqalive.RecordRows; i++ {
				ids.Append(int64(i))
				ts.Append(arrow.Timestamp(vqalive.StreamEpoch.Add(time.Duration(i) * vqalive.Interval).UnixMicro()))
			}
			fields := []arrow.Field{{Name: "request_id", Type: arrow.PrimitiveTypes.Int64}}
			cols := []arrow.Array{ids.NewArray()}
			if name != "VQA" {
				// The feature leaves with the request id and its event time
				// (the windowed join needs it).
				col, err := ml.NewTensorColumn(mem, []int64{vqalive.FeatureDim}, out[:vqalive.RecordRows*vqalive.FeatureDim])
				if err != nil {
					t.Fatal(err)
				}
				fields = append(fields, arrow.Field{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us}, ml.TensorField(m.Outputs[0].Name, []int64{vqalive.FeatureDim}))
				cols = append(cols, ts.NewArray(), col)
			} else {
				lb, sb := array.NewStringBuilder(mem), array.NewFloat32Builder(mem)
				k := len(vqalive.Answers)
				for r := 0; r < vqalive.RecordRows; r++ {
					a := modelzoo.Argmax(out[r*k : (r+1)*k])
					lb.Append(vqalive.Answers[a])
					sb.Append(out[r*k+a])
				}
				fields = append(fields, arrow.Field{Name: "answer", Type: arrow.BinaryTypes.String}, arrow.Field{Name: "score", Type: arrow.PrimitiveTypes.Float32})
				cols = append(cols, lb.NewArray(), sb.NewArray())
			}
			rec := array.NewRecord(arrow.NewSchema(fields, nil), cols, vqalive.RecordRows)
			vqaLiveWithin(t, name+"/"+v.Name+" output", v.OutputKB, vqaLiveWireKB(t, rec), 0.05)
			rec.Release()
			for _, c := range cols {
				c.Release()
			}
			ids.Release()
			ts.Release()
		}
	}
}
