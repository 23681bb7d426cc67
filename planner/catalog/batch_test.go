package catalog

import (
	"fmt"
	"strings"
	"testing"
)

func TestByBatchLoadsAndInterpolates(t *testing.T) {
	src := `models:
  - name: m
    inputs: [{name: x, type: FLOAT}]
    outputs: [{name: y, type: FLOAT}]
    variants:
      - name: v
        accuracy: 90
        output_kb: 0.01
        latency_ms:
          x2:
            p50: 0.5
            p75: 0.6
            p90: 0.7
            by_batch:
              1: {p50: 1, p75: 1.2, p90: 1.5}
              4: {p50: 2.5, p75: 3, p90: 4}
              16: {p50: 8, p75: 9, p90: 10}
`
	c, err := Parse("c.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	l := c.Model("m").Variants[0].Latency["x2"]
	for _, tc := range []struct {
		b, p int
		want float64
	}{{1, 50, 1}, {4, 90, 4}, {2, 50, 1.5}, {10, 50, 5.25}, {32, 50, 16}} {
		if got := l.BatchMs(tc.b, tc.p); got != tc.want {
			t.Errorf("BatchMs(%d, p%d) = %v, want %v", tc.b, tc.p, got, tc.want)
		}
	}
	// Budget 20 ms, rate 300/s: batch 1 (1000/s) already keeps up.
	if b, ok := l.PickBatch(50, 20, 300, 64); b != 1 || !ok {
		t.Errorf("PickBatch(20ms, 300/s) = %d, %v", b, ok)
	}
	// 1500/s needs batch 4 (1600/s), 2*2.5 ms fits 20 ms.
	if b, ok := l.PickBatch(50, 20, 1500, 64); b != 4 || !ok {
		t.Errorf("PickBatch(20ms, 1500/s) = %d, %v", b, ok)
	}
	// 5000/s: nothing keeps up; within 10 ms batch 4 is the fastest that fits.
	if b, ok := l.PickBatch(50, 10, 5000, 64); b != 4 || !ok {
		t.Errorf("PickBatch(10ms, 5000/s) = %d, %v", b, ok)
	}
	if _, ok := l.PickBatch(50, 1, 10, 64); ok {
		t.Error("a 1 ms budget cannot hold 2 x 1 ms")
	}
	// It survives a round trip through Marshal.
	b, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	c2, err := Parse("c2.yaml", b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if got := c2.Model("m").Variants[0].Latency["x2"].ByBatch[16].P90; got != 10 {
		t.Fatalf("by_batch after Marshal: %v\n%s", got, b)
	}
}

func TestByBatchRejectsBadSizes(t *testing.T) {
	src := `models:
  - name: m
    inputs: [{name: x, type: FLOAT}]
    outputs: [{name: y, type: FLOAT}]
    variants:
      - name: v
        accuracy: 90
        output_kb: 0.01
        latency_ms:
          x2:
            p50: 0.5
            p75: 0.6
            p90: 0.7
            by_batch:
              zero: {p50: 1, p75: 1.2, p90: 1.5}
              4: {p50: 3, p75: 2, p90: 4}
`
	_, err := Parse("c.yaml", []byte(src))
	if err == nil || !strings.Contains(err.Error(), `c.yaml:15:15: latency_ms.x2.by_batch: "zero" is not a batch size`) || !strings.Contains(err.Error(), "c.yaml:16:18: latency_ms.x2.by_batch.4: percentiles must not decrease") {
		t.Fatalf("%v", err)
	}
}

func TestInputSize(t *testing.T) {
	c, err := LoadFile("../../examples/fashion/sizes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := c.Model("classify_sized")
	var sides []int
	for _, v := range m.Variants {
		if len(v.InputSize) != 2 || v.InputSize[0] != v.InputSize[1] {
			t.Fatalf("%s: input_size %v", v.Name, v.InputSize)
		}
		if len(v.Latency["x2"].ByBatch) != 7 {
			t.Errorf("%s: by_batch %v, want 1..64", v.Name, v.Latency["x2"].Batches())
		}
		sides = append(sides, v.InputSize[0])
	}
	if fmt.Sprint(sides) != "[14 20 28]" {
		t.Fatalf("sides %v", sides)
	}
	_, err = Parse("c.yaml", []byte(`models:
  - name: m
    inputs: [{name: x, type: FLOAT}]
    outputs: [{name: y, type: FLOAT}]
    variants:
      - {name: v, accuracy: 1, output_kb: 1, latency_ms: {x2: 1}, input_size: [14, 1.5]}
`))
	if err == nil || !strings.Contains(err.Error(), "c.yaml:6:") || !strings.Contains(err.Error(), "input_size: 1.5 is not a size") {
		t.Fatalf("%v", err)
	}
}
