package dataflow

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// ErrPanic: an operator's callback (or a source's Produce) panicked. The
// engine recovers it at the one place every callback is called from, so a
// bug in one operator fails that query, never the process that runs it.
var ErrPanic = errors.New("dataflow: operator panicked")

// PanicError is a recovered panic: Error is one line (what panicked and
// where), Stack the goroutine's stack at the panic, for the log.
type PanicError struct {
	Where string // the instance and callback, e.g. "filter[0] batch"
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("%v: %s: %v", ErrPanic, e.Where, e.Value)
}

func (e *PanicError) Unwrap() error {
	// A panic with an error value keeps that error's kind too.
	if err, ok := e.Value.(error); ok {
		return errors.Join(ErrPanic, err)
	}
	return ErrPanic
}

// Recovered turns a value recover() returned into a *PanicError (nil for
// nil). Goroutines outside dataflow that run engine or operator code (relay
// receivers, connectors' handlers) use it to fail their query the same way.
func Recovered(where string, p any) error {
	if p == nil {
		return nil
	}
	// A refused allocation is no bug: the query asked for more memory
	// than its limit, and says so (no stack).
	var le *LimitError
	if err, ok := p.(error); ok && errors.As(err, &le) {
		return fmt.Errorf("%s: %w", where, le)
	}
	return &PanicError{Where: where, Value: p, Stack: debug.Stack()}
}

// PanicStack is the stack of the first recovered panic in err's chain, nil
// if err did not come from one.
func PanicStack(err error) []byte {
	var pe *PanicError
	if errors.As(err, &pe) {
		return pe.Stack
	}
	return nil
}
