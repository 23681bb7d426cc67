package dataaware

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/tierflow/tierflow/planner/catalog"
)

// ErrEstimator is wrapped by errors of building an estimator from bad input
// (no classes, an evidence vector of the wrong length, a bad prior).
var ErrEstimator = errors.New("dataaware: bad estimator input")

// Jeffreys is the uninformative prior the paper uses (alpha_i = 0.5, 6.3.3).
const Jeffreys = 0.5

// Posterior is a Dirichlet posterior over the frequencies of a fixed set of
// classes (SneakPeek eq. 10-11): the prior's alphas plus the evidence seen.
// With Window > 0 old evidence fades so that about Window rows of it count
// (each new row scales the counts by 1 - 1/Window): a stream whose mix
// shifts is followed within a window instead of being averaged forever.
type Posterior struct {
	Classes []string
	Alpha   []float64
	Counts  []float64
	Window  float64
	// Rows is how many rows of evidence went in (not faded).
	Rows int
}

// NewPosterior is a posterior with the symmetric prior alpha on every class.
func NewPosterior(classes []string, alpha, window float64) (*Posterior, error) {
	if len(classes) == 0 {
		return nil, fmt.Errorf("%w: no classes", ErrEstimator)
	}
	if alpha <= 0 {
		return nil, fmt.Errorf("%w: prior alpha %v must be positive", ErrEstimator, alpha)
	}
	p := &Posterior{Classes: append([]string(nil), classes...), Alpha: make([]float64, len(classes)),
		Counts: make([]float64, len(classes)), Window: window}
	for i := range p.Alpha {
		p.Alpha[i] = alpha
	}
	return p, nil
}

// Add folds one row's multinomial evidence (votes per class, in Classes'
// order: k neighbours' labels, or a one-hot prediction) into the counts.
func (p *Posterior) Add(votes []float64) error {
	if len(votes) != len(p.Counts) {
		return fmt.Errorf("%w: %d votes for %d classes", ErrEstimator, len(votes), len(p.Counts))
	}
	if p.Window > 0 {
		keep := 1 - 1/p.Window
		for i := range p.Counts {
			p.Counts[i] *= keep
		}
	}
	for i, v := range votes {
		p.Counts[i] += v
	}
	p.Rows++
	return nil
}

// Mean is the posterior mean of the class frequencies:
// (alpha_i + y_i) / sum_j (alpha_j + y_j).
func (p *Posterior) Mean() map[string]float64 {
	var sum float64
	for i := range p.Counts {
		sum += p.Alpha[i] + p.Counts[i]
	}
	out := make(map[string]float64, len(p.Classes))
	for i, c := range p.Classes {
		out[c] = (p.Alpha[i] + p.Counts[i]) / sum
	}
	return out
}

// Expected is a variant's expected accuracy (percent) under the posterior
// mean mix: sum_c theta_c * recall_c (eq. 9).
func (p *Posterior) Expected(v *catalog.Variant) float64 { return v.ExpectedAccuracy(p.Mean()) }

// Estimator keeps one posterior per stream key (the group key when the query
// partitions, say a camera; "" for the whole stream) and turns rows into
// evidence with an Evidence source. Safe for concurrent use.
type Estimator struct {
	Evidence Evidence
	Alpha    float64
	Window   float64

	mu   sync.Mutex
	post map[string]*Posterior
}

// NewEstimator builds an estimator over ev's classes with the symmetric
// prior alpha (Jeffreys when 0) and the fading window (0: never fade).
func NewEstimator(ev Evidence, alpha, window float64) (*Estimator, error) {
	if ev == nil || len(ev.Classes()) == 0 {
		return nil, fmt.Errorf("%w: evidence without classes", ErrEstimator)
	}
	if alpha == 0 {
		alpha = Jeffreys
	}
	if alpha < 0 || window < 0 {
		return nil, fmt.Errorf("%w: prior %v and window %v must not be negative", ErrEstimator, alpha, window)
	}
	return &Estimator{Evidence: ev, Alpha: alpha, Window: window, post: map[string]*Posterior{}}, nil
}

// Observe adds the evidence of rows (n rows of Evidence.Dim() values each,
// row-major) to key's posterior.
func (e *Estimator) Observe(key string, rows []float32) error {
	d := e.Evidence.Dim()
	if d <= 0 || len(rows)%d != 0 {
		return fmt.Errorf("%w: %d values are not rows of %d", ErrEstimator, len(rows), d)
	}
	votes := make([][]float64, len(rows)/d)
	for i := range votes {
		votes[i] = e.Evidence.Votes(rows[i*d : (i+1)*d])
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.post[key]
	if p == nil {
		var err error
		if p, err = NewPosterior(e.Evidence.Classes(), e.Alpha, e.Window); err != nil {
			return err
		}
		e.post[key] = p
	}
	for _, v := range votes {
		if err := p.Add(v); err != nil {
			return err
		}
	}
	return nil
}

// Mix is key's estimated class mix (posterior mean) and the rows of
// evidence behind it; nil before any row.
func (e *Estimator) Mix(key string) (map[string]float64, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.post[key]
	if p == nil {
		return nil, 0
	}
	return p.Mean(), p.Rows
}

// Keys are the stream keys seen, sorted.
func (e *Estimator) Keys() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]string, 0, len(e.post))
	for k := range e.post {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
