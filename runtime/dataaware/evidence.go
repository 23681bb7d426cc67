package dataaware

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Evidence turns one live row (its feature vector) into a multinomial
// observation over Classes: a SneakPeek model (section 4.2).
type Evidence interface {
	Classes() []string
	// Dim is the length of a row's feature vector.
	Dim() int
	// Votes is the row's evidence, one count per class.
	Votes(row []float32) []float64
}

// KNN is k-nearest-neighbour evidence in a labelled sample of the training
// data: each of a row's k nearest sample points votes for its label (k = 5
// and two neighbours say "no fall", three "fall": <2, 3>). Points live in a
// compact index: a Gaussian random projection to Proj dimensions
// (Johnson-Lindenstrauss keeps distances roughly), searched exactly, which
// is what an approximate index buys at this size.
type KNN struct {
	K       int
	classes []string
	dim     int
	proj    int
	w       []float32 // proj x dim
	points  []float32 // n x proj
	labels  []int
}

// NewKNN indexes the sample x (n rows of dim values) with labels y (indexes
// into classes), projected to proj dimensions (0 or >= dim: no projection)
// with a fixed seed.
func NewKNN(x []float32, y []uint8, dim int, classes []string, k, proj int, seed uint64) (*KNN, error) {
	if dim <= 0 || len(x) != dim*len(y) || len(y) == 0 {
		return nil, fmt.Errorf("%w: %d values for %d labels of %d dims", ErrEstimator, len(x), len(y), dim)
	}
	if k < 1 || k > len(y) {
		return nil, fmt.Errorf("%w: k = %d with %d sample points", ErrEstimator, k, len(y))
	}
	for _, l := range y {
		if int(l) >= len(classes) {
			return nil, fmt.Errorf("%w: label %d of %d classes", ErrEstimator, l, len(classes))
		}
	}
	ix := &KNN{K: k, classes: classes, dim: dim, proj: proj}
	if proj <= 0 || proj >= dim {
		ix.proj = dim
	} else {
		r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		ix.w = make([]float32, proj*dim)
		s := 1 / math.Sqrt(float64(proj))
		for i := range ix.w {
			ix.w[i] = float32(r.NormFloat64() * s)
		}
	}
	n := len(y)
	ix.points = make([]float32, n*ix.proj)
	for i := 0; i < n; i++ {
		ix.project(x[i*dim:(i+1)*dim], ix.points[i*ix.proj:(i+1)*ix.proj])
	}
	ix.labels = make([]int, n)
	for i, l := range y {
		ix.labels[i] = int(l)
	}
	return ix, nil
}

// WithK is the same index answering with k neighbours.
func (ix *KNN) WithK(k int) *KNN {
	c := *ix
	c.K = max(1, min(k, len(ix.labels)))
	return &c
}

func (ix *KNN) project(src, dst []float32) {
	if ix.w == nil {
		copy(dst, src)
		return
	}
	for j := 0; j < ix.proj; j++ {
		row := ix.w[j*ix.dim : (j+1)*ix.dim]
		row = row[:len(src)] // one bounds check, not one a value
		var s float32
		for i, v := range src {
			s += row[i] * v
		}
		dst[j] = s
	}
}

func (ix *KNN) Classes() []string { return ix.classes }
func (ix *KNN) Dim() int          { return ix.dim }

// Votes counts the labels of the row's K nearest sample points.
func (ix *KNN) Votes(row []float32) []float64 {
	votes := make([]float64, len(ix.classes))
	for _, l := range ix.Neighbours(row) {
		votes[l]++
	}
	return votes
}

// Neighbours are the labels of the row's K nearest sample points, nearest
// first (the first k of them are its k-NN evidence for any k <= K).
func (ix *KNN) Neighbours(row []float32) []int {
	q := make([]float32, ix.proj)
	ix.project(row, q)
	type nb struct {
		d float32
		l int
	}
	best := make([]nb, 0, ix.K+1)
	for i := range ix.labels {
		p := ix.points[i*ix.proj : (i+1)*ix.proj]
		// Once K are kept, a point whose distance reaches the K-th's is
		// skipped; the sum of squares only grows, so it is skipped as soon
		// as a part of the sum reaches it (checked every 16 terms). The
		// terms add in the same order: a point kept has the same distance.
		full := len(best) == ix.K
		var bound float32
		if full {
			bound = best[ix.K-1].d
		}
		var d float32
		for j := 0; j < len(q); j += 16 {
			qs := q[j:min(j+16, len(q))]
			ps := p[j : j+len(qs)]
			for k, v := range qs {
				x := v - ps[k]
				d += x * x
			}
			if full && d >= bound {
				break
			}
		}
		if full && d >= bound {
			continue
		}
		at := sort.Search(len(best), func(j int) bool { return best[j].d > d })
		best = append(best, nb{})
		copy(best[at+1:], best[at:])
		best[at] = nb{d, ix.labels[i]}
		if len(best) > ix.K {
			best = best[:ix.K]
		}
	}
	out := make([]int, len(best))
	for i, b := range best {
		out[i] = b.l
	}
	return out
}

// Predicted is one cheap model's prediction as evidence: a one-hot vector
// (a low-information update, section 4.2). Rows are the class index the
// model predicted, as a single value.
type Predicted struct{ Labels []string }

func (p Predicted) Classes() []string { return p.Labels }
func (p Predicted) Dim() int          { return 1 }

// Votes is one vote for the predicted class (none for an unknown index).
func (p Predicted) Votes(row []float32) []float64 {
	v := make([]float64, len(p.Labels))
	if i := int(row[0]); i >= 0 && i < len(v) {
		v[i] = 1
	}
	return v
}

// Argmax is the class a vote vector favours (ties: the lower index) and its
// share of the votes: the estimator's own answer to a request, the
// short-circuit candidate of the scheduler (section 5.3.1).
func Argmax(votes []float64) (int, float64) {
	best, sum := 0, 0.0
	for i, v := range votes {
		sum += v
		if v > votes[best] {
			best = i
		}
	}
	if sum == 0 {
		return best, 0
	}
	return best, votes[best] / sum
}
