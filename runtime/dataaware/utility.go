package dataaware

import (
	"fmt"
	"math"
)

// Penalty is a deadline penalty gamma(d, e) of SneakPeek 6.1: 0 when a
// request completes by its deadline, up to 1 (the utility is then 0) the
// later it completes. d and e are the deadline and the completion time,
// both measured from the request's arrival.
type Penalty string

// The penalties of SneakPeek 6.1.
const (
	// Step: any miss costs everything.
	Step Penalty = "step"
	// Linear: the miss as a share of the deadline, (e-d)/d, up to 1.
	Linear Penalty = "linear"
	// Sigmoid: 1/(1+(x/(1-x))^-3) with x = (e-d)/d, 1 from x >= 1.
	Sigmoid Penalty = "sigmoid"
)

// ParsePenalty reads a penalty name.
func ParsePenalty(s string) (Penalty, error) {
	switch p := Penalty(s); p {
	case Step, Linear, Sigmoid:
		return p, nil
	}
	return "", fmt.Errorf("%w: unknown penalty %q (want step, linear or sigmoid)", ErrEstimator, s)
}

// Gamma is the penalty of completing at e against deadline d. The paper
// writes max(1, ...) for the linear and sigmoid forms; a penalty above 1
// would make utility negative, so it is read as the cap min(1, ...).
func (p Penalty) Gamma(d, e float64) float64 {
	if e <= d {
		return 0
	}
	if d <= 0 {
		return 1
	}
	x := (e - d) / d
	switch p {
	case Linear:
		return math.Min(1, x)
	case Sigmoid:
		if x >= 1 {
			return 1
		}
		return math.Min(1, 1/(1+math.Pow(x/(1-x), -3)))
	}
	return 1
}

// Utility of a request (SneakPeek eq. 2): the accuracy (0..1) of the model
// that serves it, less the deadline penalty.
func (p Penalty) Utility(acc, d, e float64) float64 { return acc * (1 - p.Gamma(d, e)) }
