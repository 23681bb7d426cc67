package optimize

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// Strategy finds a plan for a problem. Infeasible objectives are not an error:
// the Plan says Feasible false with a Reason. Errors are for malformed input
// (ErrInvalidProblem) or a cancelled context.
type Strategy interface {
	Name() string
	// Doc is one line for `--help` and EXPLAIN.
	Doc() string
	Optimize(ctx context.Context, p *Problem, o Options) (*Plan, error)
}

// Registry maps strategy names to strategies. It is an explicit value: build one
// with NewRegistry or DefaultRegistry and pass it where strategies are chosen.
type Registry struct {
	byName map[string]Strategy
}

// NewRegistry holds the given strategies; a later one replaces an earlier one of
// the same name (an overlay).
func NewRegistry(s ...Strategy) *Registry {
	r := &Registry{byName: map[string]Strategy{}}
	for _, x := range s {
		r.byName[x.Name()] = x
	}
	return r
}

// DefaultStrategy is the name of the strategy used when none is asked for.
const DefaultStrategy = "auto"

// DefaultRegistry holds every built-in strategy.
func DefaultRegistry() *Registry {
	return NewRegistry(
		Auto{},
		JellyBean{},
		Exhaustive{},
		BestFit{},
		FirstFit{},
		MostAccurate{},
		PTC{},
		PTE{},
		SPC{},
	)
}

// Lookup returns the named strategy; "" means DefaultStrategy.
func (r *Registry) Lookup(name string) (Strategy, error) {
	if name == "" {
		name = DefaultStrategy
	}
	s, ok := r.byName[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %v)", ErrUnknownStrategy, name, r.Names())
	}
	return s, nil
}

// Names lists the registered strategies, sorted.
func (r *Registry) Names() []string {
	n := make([]string, 0, len(r.byName))
	for k := range r.byName {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Optimize runs the named strategy of r on p. A problem with a Budget asks
// for the most accurate plan within it instead of the cheapest: that is
// WithinBudget's exact search, which the cost-minimising strategies cannot
// answer, so only auto and exhaustive (both exact) accept it.
func (r *Registry) Optimize(ctx context.Context, name string, p *Problem, o Options) (*Plan, error) {
	s, err := r.Lookup(name)
	if err != nil {
		return nil, err
	}
	if p.Objectives.Budget > 0 {
		if n := s.Name(); n != "auto" && n != "exhaustive" {
			return nil, fmt.Errorf("%w: strategy %s minimises cost; a BUDGET asks for the most accurate plan within it (strategy auto or exhaustive)", ErrBudgetStrategy, n)
		}
		return WithinBudget(ctx, p, o)
	}
	return s.Optimize(ctx, p, o)
}

func sinceMs(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }
