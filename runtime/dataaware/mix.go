package dataaware

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
)

// Mix is a class mix a benchmark stream is drawn with: the frequency of
// every class, in the classes' label order (any non-negative weights).
type Mix struct {
	Name      string    `json:"name"`
	ClassFreq []float64 `json:"class_freq"`
}

// LoadMixes reads a JSON list of mixes and checks each has one
// non-negative, not all zero, frequency per class.
func LoadMixes(path string, classes int) ([]Mix, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ms []Mix
	if err := json.Unmarshal(b, &ms); err != nil {
		return nil, fmt.Errorf("%w: %s: %v (want a list of {\"name\", \"class_freq\": [%d numbers]})", ErrEstimator, path, err, classes)
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("%w: %s: no mixes", ErrEstimator, path)
	}
	for i, m := range ms {
		if m.Name == "" {
			return nil, fmt.Errorf("%w: %s: mix %d has no name", ErrEstimator, path, i+1)
		}
		if len(m.ClassFreq) != classes {
			return nil, fmt.Errorf("%w: %s: mix %q has %d class frequencies, want %d", ErrEstimator, path, m.Name, len(m.ClassFreq), classes)
		}
		var sum float64
		for _, f := range m.ClassFreq {
			if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("%w: %s: mix %q: frequency %v is not a non-negative number", ErrEstimator, path, m.Name, f)
			}
			sum += f
		}
		if sum == 0 {
			return nil, fmt.Errorf("%w: %s: mix %q: all frequencies are zero", ErrEstimator, path, m.Name)
		}
	}
	return ms, nil
}

// BuiltinMixes are skewed Fashion-MNIST mixes (label order T-shirt/top,
// Trouser, Pullover, Dress, Coat, Sandal, Shirt, Sneaker, Bag, Ankle boot):
// a shirt shelf, a shoe shelf, a winter rack, a bag store, a summer mix and
// the uniform test-set mix for reference.
func BuiltinMixes() []Mix {
	return []Mix{
		{"shirts", []float64{10, 2, 8, 2, 8, 1, 60, 1, 4, 4}},
		{"footwear", []float64{2, 2, 2, 2, 2, 30, 2, 30, 3, 25}},
		{"winter", []float64{5, 5, 35, 3, 40, 1, 5, 1, 3, 2}},
		{"bags", []float64{3, 10, 3, 3, 3, 3, 3, 3, 65, 4}},
		{"summer", []float64{30, 20, 2, 25, 1, 15, 2, 3, 1, 1}},
		{"uniform", []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
	}
}

// Draw picks n rows of a pool whose class of row i is labels[i], so that
// classes come with m's frequencies (rows drawn uniformly within a class,
// with replacement; a class the pool lacks is skipped). Deterministic in
// seed.
func Draw(m Mix, labels []uint8, n int, seed uint64) []int {
	byClass := make([][]int, len(m.ClassFreq))
	for i, l := range labels {
		if int(l) < len(byClass) {
			byClass[l] = append(byClass[l], i)
		}
	}
	var cum []float64
	var sum float64
	for c, f := range m.ClassFreq {
		if len(byClass[c]) == 0 {
			f = 0
		}
		sum += f
		cum = append(cum, sum)
	}
	if sum == 0 {
		return nil
	}
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	out := make([]int, n)
	for i := range out {
		u := r.Float64() * sum
		c := 0
		for c < len(cum)-1 && u >= cum[c] {
			c++
		}
		rows := byClass[c]
		out[i] = rows[r.IntN(len(rows))]
	}
	return out
}
