package dataaware_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/runtime/dataaware"
	"github.com/tierflow/tierflow/runtime/modelzoo"
)

var labels = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

func load(t testing.TB, images, lbls string) ([]float32, []uint8) {
	t.Helper()
	dir := filepath.Join("..", "..", "examples", "fashion", "data")
	x, err := modelzoo.ReadIDXFile(filepath.Join(dir, images))
	if err != nil {
		t.Fatal(err)
	}
	y, err := modelzoo.ReadIDXFile(filepath.Join(dir, lbls))
	if err != nil {
		t.Fatal(err)
	}
	return x.Floats(), y.Data
}

func TestPosteriorIsDirichletMultinomial(t *testing.T) {
	p, err := dataaware.NewPosterior([]string{"no fall", "fall"}, dataaware.Jeffreys, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The paper's example: k = 5, two neighbours "no fall", three "fall".
	if err := p.Add([]float64{2, 3}); err != nil {
		t.Fatal(err)
	}
	m := p.Mean()
	if math.Abs(m["no fall"]-2.5/6) > 1e-12 || math.Abs(m["fall"]-3.5/6) > 1e-12 {
		t.Fatalf("mean %v, want (0.5+2)/6 and (0.5+3)/6", m)
	}
	if err := p.Add([]float64{1}); !errors.Is(err, dataaware.ErrEstimator) {
		t.Fatalf("short evidence: %v", err)
	}
	// A fading window forgets: after many "no fall" rows, early "fall"
	// evidence weighs almost nothing.
	w, _ := dataaware.NewPosterior([]string{"no fall", "fall"}, dataaware.Jeffreys, 20)
	for i := 0; i < 50; i++ {
		w.Add([]float64{0, 1})
	}
	for i := 0; i < 100; i++ {
		w.Add([]float64{1, 0})
	}
	if f := w.Mean()["fall"]; f > 0.05 {
		t.Fatalf("windowed posterior still gives fall %.3f after 100 no-fall rows", f)
	}
	if _, err := dataaware.NewPosterior(nil, 1, 0); !errors.Is(err, dataaware.ErrEstimator) {
		t.Fatal("no classes accepted")
	}
}

// TestKNNEstimatesASkewedMix feeds the estimator a stream of test images that
// is 70% shirts and checks that the posterior finds the skew and that the
// data-aware accuracy of a variant moves toward the shirts' recall.
func TestKNNEstimatesASkewedMix(t *testing.T) {
	tx, ty := load(t, "train-sample-images-idx3-ubyte.gz", "train-sample-labels-idx1-ubyte.gz")
	x, y := load(t, "test-images-idx3-ubyte.gz", "test-labels-idx1-ubyte.gz")
	ix, err := dataaware.NewKNN(tx, ty, 784, labels, 5, 64, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The compact index still classifies well above chance (10%).
	ok := 0
	for i := 0; i < 500; i++ {
		if c, _ := dataaware.Argmax(ix.Votes(x[i*784 : (i+1)*784])); c == int(y[i]) {
			ok++
		}
	}
	if ok < 300 {
		t.Fatalf("k=5 in 64 projected dims: %d/500 right", ok)
	}
	est, err := dataaware.NewEstimator(ix, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var rows []float32
	shirts, others := 0, 0
	for i := range y {
		switch {
		case y[i] == 6 && shirts < 140:
			shirts++
		case y[i] != 6 && others < 60:
			others++
		default:
			continue
		}
		rows = append(rows, x[i*784:(i+1)*784]...)
	}
	if err := est.Observe("cam1", rows); err != nil {
		t.Fatal(err)
	}
	mix, n := est.Mix("cam1")
	if n != 200 || mix["Shirt"] < 0.35 || mix["Trouser"] > 0.1 {
		t.Fatalf("mix after %d rows: %v", n, mix)
	}
	if m, _ := est.Mix("cam2"); m != nil {
		t.Fatal("a key without rows has a mix")
	}
	v := &catalog.Variant{Accuracy: 90, Classes: []catalog.ClassRecall{{Class: "Shirt", Recall: 60}}}
	for _, c := range labels[:] {
		if c != "Shirt" {
			v.Classes = append(v.Classes, catalog.ClassRecall{Class: c, Recall: 93})
		}
	}
	if got := v.ExpectedAccuracy(mix); got > 85 {
		t.Fatalf("data-aware accuracy %.2f on a shirt-heavy stream, profiled 90", got)
	}
	if err := est.Observe("cam1", rows[:100]); !errors.Is(err, dataaware.ErrEstimator) {
		t.Fatalf("partial row: %v", err)
	}
}

func BenchmarkKNNVotes(b *testing.B) {
	tx, ty := load(b, "train-sample-images-idx3-ubyte.gz", "train-sample-labels-idx1-ubyte.gz")
	ix, _ := dataaware.NewKNN(tx, ty, 784, labels, 5, 64, 1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ix.Votes(tx[(i%100)*784 : (i%100+1)*784])
	}
}

func TestDrawFollowsTheMix(t *testing.T) {
	_, y := load(t, "test-images-idx3-ubyte.gz", "test-labels-idx1-ubyte.gz")
	m := dataaware.Mix{Name: "shoes", ClassFreq: []float64{0, 0, 0, 0, 0, 1, 0, 1, 0, 2}}
	rows := dataaware.Draw(m, y, 4000, 3)
	n := map[uint8]int{}
	for _, r := range rows {
		n[y[r]]++
	}
	if len(n) != 3 || math.Abs(float64(n[9])/4000-0.5) > 0.03 || math.Abs(float64(n[5])/4000-0.25) > 0.03 {
		t.Fatalf("class counts %v for freq %v", n, m.ClassFreq)
	}
	again := dataaware.Draw(m, y, 4000, 3)
	for i := range rows {
		if rows[i] != again[i] {
			t.Fatal("dataaware.Draw is not deterministic in its seed")
		}
	}
}

func TestLoadMixesNamesTheProblem(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ src, want string }{
		{`[{"name":"a","class_freq":[1,2]}]`, `mix "a" has 2 class frequencies, want 3`},
		{`[{"name":"a","class_freq":[1,-2,0]}]`, `frequency -2`},
		{`[{"name":"a","class_freq":[0,0,0]}]`, `all frequencies are zero`},
		{`{"name":"a"}`, `want a list`},
		{`[{"class_freq":[1,1,1]}]`, `mix 1 has no name`},
	} {
		p := filepath.Join(dir, "m.json")
		if err := os.WriteFile(p, []byte(tc.src), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := dataaware.LoadMixes(p, 3)
		if !errors.Is(err, dataaware.ErrEstimator) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.src, err, tc.want)
		}
	}
}
