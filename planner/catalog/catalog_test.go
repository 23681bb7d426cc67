package catalog

import (
	"errors"
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
		`bad.yaml:13:21: sink.kind: want nats, jetstream, file or stdout, got "kafka"`,
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
