package dataaware

// Calibration turns a row's kNN votes into calibrated evidence: the
// estimator's profiled confusion, P(true class | the class its votes name),
// mixed by the votes. Votes taken at face value are overconfident exactly
// where SneakPeek groups by them: the rows the kNN calls "coat" include the
// pullovers and shirts it mistakes for coats, whose recall is lower, so a
// group split by estimated class would estimate its accuracy from the
// class it was split on alone (a selection bias) and win on paper what it
// loses when it runs.
type Calibration struct {
	// Given[c'][c] is P(true c | votes name c'), from the profile rows
	// with a Jeffreys prior.
	Given [][]float64
}

// NewCalibration profiles the estimator: votes[i] are the evidence of
// profile row i, truth[i] its true class (of k classes).
func NewCalibration(votes [][]float64, truth []int, k int) *Calibration {
	n := make([][]float64, k)
	for c := range n {
		n[c] = make([]float64, k)
		for t := range n[c] {
			n[c][t] = Jeffreys / float64(k)
		}
		n[c][c] += Jeffreys
	}
	for i, v := range votes {
		if c, _ := Argmax(v); c >= 0 && c < k && truth[i] >= 0 && truth[i] < k {
			n[c][truth[i]]++
		}
	}
	for c := range n {
		var s float64
		for _, x := range n[c] {
			s += x
		}
		for t := range n[c] {
			n[c][t] /= s
		}
	}
	return &Calibration{Given: n}
}

// Votes are votes calibrated: each vote for c' spread over the true
// classes as the profile found them behind c'. The total is kept, so the
// posterior weighs a row as much as before.
func (cb *Calibration) Votes(votes []float64) []float64 {
	if cb == nil || len(votes) != len(cb.Given) {
		return votes
	}
	out := make([]float64, len(votes))
	for c, v := range votes {
		for t, p := range cb.Given[c] {
			out[t] += v * p
		}
	}
	return out
}
