package dataflow

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// BuildLocal builds every worker of g in this process, connected by
// cfg.Transport (a fresh LocalTransport when nil). Index i of the result is
// worker i.
func BuildLocal(g *Graph, cfg Config) ([]*Worker, error) {
	if cfg.Transport == nil {
		cfg.Transport = NewLocalTransport()
	}
	n := g.Workers()
	ws := make([]*Worker, 0, n)
	for id := 0; id < n; id++ {
		w, err := NewWorker(g, id, cfg)
		if err != nil {
			for _, b := range ws {
				b.Close()
			}
			return nil, err
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// Run builds every worker of g in this process and runs them concurrently
// until the dataflow finishes, fails or ctx ends. A failure anywhere cancels
// all workers; the first failure (not a cancellation it caused) is returned.
func Run(ctx context.Context, g *Graph, cfg Config) error {
	var ws []*Worker
	if cfg.RequestStop == nil {
		// An operator's StopSources ends every worker's sources here.
		var once sync.Once
		cfg.RequestStop = func() {
			once.Do(func() {
				for _, w := range ws {
					w.StopSources()
				}
			})
		}
	}
	ws, err := BuildLocal(g, cfg)
	if err != nil {
		return err
	}
	return RunWorkers(ctx, ws)
}

// RunWorkers runs workers concurrently; see Run.
func RunWorkers(ctx context.Context, ws []*Worker) error {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Bound every queue before any worker starts sending.
	for _, w := range ws {
		w.makeBlocking()
	}
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = w.Run(ctx); errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	return rootCause(parent, errs)
}

// rootCause picks the first error that is not a consequence of another
// failure or of cancellation, else parent's error, else the first error.
func rootCause(parent context.Context, errs []error) error {
	var first error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if !isConsequence(err) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	if first != nil && parent.Err() != nil {
		return parent.Err()
	}
	return first
}

// StepAll steps every worker once and reports whether any did something.
func StepAll(ws []*Worker) (bool, error) {
	busy := false
	for _, w := range ws {
		b, err := w.Step()
		busy = busy || b
		if err != nil {
			return busy, err
		}
	}
	return busy, nil
}

// ErrStuck: stepping made no progress although the dataflow is not done
// (an operator holds a capability it never drops, or input never closes).
var ErrStuck = errors.New("dataflow: no progress")

// StepUntilDone steps all workers round-robin until every one is Done, at
// most maxRounds rounds. A round without progress before that is ErrStuck,
// unless an operator waits for a wake-up, which it sleeps for.
// On error every worker is closed.
func StepUntilDone(ws []*Worker, maxRounds int) error {
	for r := 0; r < maxRounds; r++ {
		done := true
		for _, w := range ws {
			done = done && w.Done()
		}
		if done {
			return nil
		}
		busy, err := StepAll(ws)
		if err != nil {
			closeAll(ws)
			return err
		}
		if !busy {
			if at, ok := nextWake(ws); ok {
				// Idle until a requested wake-up on the real clock: waiting
				// for time to pass is the point here, not synchronisation.
				// (With an injected Config.Now, step by hand instead.)
				time.Sleep(min(max(time.Until(at), 0), 100*time.Millisecond))
				continue
			}
			closeAll(ws)
			return fmt.Errorf("%w after %d rounds", ErrStuck, r)
		}
	}
	closeAll(ws)
	return fmt.Errorf("%w: not done after %d rounds", ErrStuck, maxRounds)
}

func nextWake(ws []*Worker) (time.Time, bool) {
	var at time.Time
	for _, w := range ws {
		if t, ok := w.NextWake(); ok && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	return at, !at.IsZero()
}

func closeAll(ws []*Worker) {
	for _, w := range ws {
		w.Close()
	}
}
