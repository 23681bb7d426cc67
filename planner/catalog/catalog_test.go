package catalog

import (
	"errors"
	"math"
	"strings"
	"testing"
)

const good = `
models:
  - name: Detect
    output_ratio: 2
    inputs: [{name: image, type: "TENSOR(FLOAT, 3, 4, 4)"}]
    outputs: [{name: label, type: VARCHAR}, {name: score, type: DOUBLE}]
    variants:
      - name: small
        accuracy: 80
        output_kb: 1.5
        latency_ms: {x2: {p50: 10, p75: 12, p90: 15}, v100: 2}
  - name: Join
    variants:
      - name: default
        accuracy: 0
        output_kb: 0.1
        latency_ms: {x2: 1}
    end_to_end:
      models: [Detect]
      rows: [{variants: [small], accuracy: 77}]
streams:
  - {name: cams, rate: 8, item_kb: 100, tier: edge, columns: [{name: image, type: "TENSOR(FLOAT, 3, 4, 4)"}]}
sinks:
  - {name: out, kind: stdout}
`

func TestParseGood(t *testing.T) {
	c, err := Parse("c.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	m := c.Model("detect")
	if m == nil || m.Ratio() != 2 || m.Variant("small").Latency["v100"].At(90) != 2 {
		t.Fatalf("model: %+v", m)
	}
	if c.Model("Join").Ratio() != 1 {
		t.Fatal("default ratio")
	}
	f, err := m.Inputs[0].Field()
	if err != nil || f.Type.String() != "fixed_size_list<item: float32, nullable>[48]" {
		t.Fatalf("field %v %v", f, err)
	}
	if v, _ := f.Metadata.GetValue(ShapeKey); v != "3,4,4" {
		t.Fatalf("shape %q", v)
	}
	b, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("again.yaml", b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if again.Model("Join").EndToEnd.Rows[0].Accuracy != 77 || again.Stream("cams").Rate != 8 {
		t.Fatalf("round trip lost data:\n%s", b)
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	src := `models:
  - name: A
    variants:
      - name: v
        accuracy: high
        output_kb: 1
        latency_ms: {x2: {p50: 3, p75: 2, p90: 4}}
  - name: a
    outputs: [{name: x, type: "TENSOR(FLOT, 3)"}]
    variants: []
    end_to_end: {models: [B], rows: []}
sinks:
  - {name: s, kind: kafka}
`
	_, err := Parse("bad.yaml", []byte(src))
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("want ErrInvalid, got %v", err)
	}
	want := []string{
		`bad.yaml:5:19: variant.accuracy: want a number, got "high"`,
		"bad.yaml:7:26: latency_ms.x2: percentiles must not decrease",
		`bad.yaml:8:5: model "a": name already used at bad.yaml:2:5`,
		`bad.yaml:9:31: model.outputs.type: unknown type "FLOT"`,
		`bad.yaml:8:5: model "a": needs at least one variant`,
		`unknown model "B"`,
		`bad.yaml:13:21: sink.kind: want nats, jetstream, file, stdout or discard, got "kafka"`,
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in:\n%v", w, err)
		}
	}
}

// Value fractions of a model output load as written; a fraction over 1, or
// fractions adding up to more than 1, are errors at their line and column.
func TestOutputValues(t *testing.T) {
	const head = `
models:
  - name: m
    inputs: [{name: x, type: "TENSOR(FLOAT, 4)"}]
    outputs:
      - {name: label, type: VARCHAR, values: `
	const tail = `}
    variants: [{name: v, accuracy: 90, output_kb: 0.02, latency_ms: {x2: {p50: 1, p75: 1, p90: 1}}}]
`
	c, err := Parse("c.yaml", []byte(head+`{a: 0.75, b: 0.25}`+tail))
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Models[0].Outputs[0].Values; v["a"] != 0.75 || v["b"] != 0.25 || len(v) != 2 {
		t.Fatalf("values %v", v)
	}
	for _, bad := range []struct{ values, want string }{
		{`{a: 1.5}`, "c.yaml:6:50: model.outputs.values.a: 1.5 is not a fraction of rows"},
		{`{a: 0.75, b: 0.5}`, "c.yaml:6:46: model.outputs.values: the fractions add up to 1.25, more than 1"},
	} {
		_, err := Parse("c.yaml", []byte(head+bad.values+tail))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("values %s: error %v, want %q", bad.values, err, bad.want)
		}
	}
}

// TestClassRecalls reads per-class profiles, weighs them by a class mix, and
// reports a bad row where it is.
func TestClassRecalls(t *testing.T) {
	src := `models:
  - name: m
    variants:
      - name: a
        accuracy: 80
        output_kb: 1
        latency_ms: {x: 1}
        classes:
          - {class: cat, recall: 90, support: 10}
          - {class: dog, recall: 70, support: 10}
`
	c, err := Parse("c.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	v := c.Model("m").Variant("a")
	if r, ok := v.Recall("dog"); !ok || r != 70 {
		t.Fatalf("recall dog = %v %v", r, ok)
	}
	for _, tc := range []struct {
		freq map[string]float64
		want float64
	}{
		{map[string]float64{"cat": 1, "dog": 1}, 80},
		{map[string]float64{"cat": 0.9, "dog": 0.1}, 88},
		{map[string]float64{"dog": 3}, 70},
		{map[string]float64{"bird": 1}, 80}, // nothing known: the profiled accuracy
		{nil, 80},
	} {
		if got := v.ExpectedAccuracy(tc.freq); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("ExpectedAccuracy(%v) = %v, want %v", tc.freq, got, tc.want)
		}
	}
	bad := strings.Replace(src, "recall: 70", "recall: 170", 1)
	bad = strings.Replace(bad, "class: dog", "class: cat", 1)
	_, err = Parse("c.yaml", []byte(bad))
	if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "c.yaml:10:") ||
		!strings.Contains(err.Error(), "not a percentage") || !strings.Contains(err.Error(), `class "cat" profiled twice`) {
		t.Fatalf("bad classes: %v", err)
	}
}

// TestImageAndDecodeProblems: a vision model's image recipe and decode step
// are checked at load, each problem at its line.
func TestImageAndDecodeProblems(t *testing.T) {
	src := `models:
  - name: detect
    outputs: [{name: x0, type: INT}]
    image: {fit: stretch, mean: [0.5, 0.5], std: [0.5, 0, 0.5]}
    decode: {kind: ctc, threshold: 2}
    variants: [{name: d, output_kb: 1, latency_ms: {x2: 1}}]
`
	_, err := Parse("c.yaml", []byte(src))
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	for _, want := range []string{"c.yaml:4:", "want long_side or height", "mean: want one value per channel", "std: 0 must be positive",
		"c.yaml:5:", "kind ctc needs a dictionary", "threshold: 2 is not a probability"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	ok := `models:
  - name: detect
    outputs: [{name: x0, type: INT}]
    image: {fit: long_side, mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225], bgr: true}
    decode: {kind: db, box_threshold: 0.6}
    variants: [{name: d, output_kb: 1, input_size: [320, 320], latency_ms: {x2: 1}}]
`
	c, err := Parse("c.yaml", []byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if m := c.Models[0]; m.Image == nil || !m.Image.BGR || m.Image.Fit != "long_side" || m.Decode.Kind != "db" || m.Decode.BoxThreshold != 0.6 {
		t.Errorf("parsed %+v %+v", m.Image, m.Decode)
	}
}

// A latency profile by thread count: the planner takes the one of the
// worker's count, or of the most threads under it.
func TestLatencyForThreads(t *testing.T) {
	c, err := Parse("c.yaml", []byte(`
models:
  - name: m
    variants:
      - name: v
        output_kb: 1
        latency_ms:
          x4:
            threads: 1
            p50: 100
            p75: 110
            p90: 120
            by_batch: {1: {p50: 100, p75: 110, p90: 120}}
            by_threads:
              2: {p50: 60, p75: 66, p90: 70, by_batch: {1: {p50: 60, p75: 66, p90: 70}}}
              4: {p50: 40, p75: 44, p90: 50}
`))
	if err != nil {
		t.Fatal(err)
	}
	l := c.Model("m").Variant("v").Latency["x4"]
	for _, tc := range []struct {
		threads int
		p50     float64
	}{{0, 100}, {1, 100}, {2, 60}, {3, 60}, {4, 40}, {16, 40}} {
		if got := l.ForThreads(tc.threads); got.P50 != tc.p50 {
			t.Errorf("ForThreads(%d): p50 %g, want %g", tc.threads, got.P50, tc.p50)
		}
	}
	if got := l.ForThreads(2).ByBatch[1].P50; got != 60 {
		t.Errorf("ForThreads(2) by batch 1: %g, want the 2-thread call's 60", got)
	}
	for _, bad := range []string{
		"latency_ms: {x4: {p50: 1, p75: 1, p90: 1, by_threads: {2: {p50: 1, p75: 1, p90: 1}}}}",
		"latency_ms: {x4: {threads: 1, p50: 1, p75: 1, p90: 1, by_threads: {zero: {p50: 1, p75: 1, p90: 1}}}}",
		"latency_ms: {x4: {threads: 0, p50: 1, p75: 1, p90: 1}}",
	} {
		src := "models:\n  - name: m\n    variants:\n      - name: v\n        output_kb: 1\n        " + bad + "\n"
		if _, err := Parse("c.yaml", []byte(src)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

// A catalog with profiles by thread count reads back what it wrote
// (tierflow profile --write).
func TestLatencyByThreadsRoundTrips(t *testing.T) {
	c := &Catalog{Models: []*Model{{Name: "m", Variants: []*Variant{{Name: "v", OutputKB: 1, Latency: map[string]Latency{
		"x2": {P50: 10, P75: 11, P90: 12, Threads: 1, ByBatch: map[int]Latency{1: {P50: 10, P75: 11, P90: 12}},
			ByThreads: map[int]Latency{2: {P50: 6, P75: 7, P90: 8, Threads: 2, ByBatch: map[int]Latency{1: {P50: 6, P75: 7, P90: 8}}}}}}}}}}}
	b, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("c.yaml", b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if got := back.Model("m").Variant("v").Latency["x2"].ForThreads(2); got.P50 != 6 || got.ByBatch[1].P90 != 8 {
		t.Errorf("read back %+v from\n%s", got, b)
	}
}
