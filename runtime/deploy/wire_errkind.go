package deploy

import (
	"errors"
	"io/fs"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/bind"
)

// KindInput is the error kind of a query that failed because of its input:
// the script, the catalog, a model file or its shapes. Errors cross NATS as
// text, so their kind travels beside them, and the client turns it back into
// an error wrapping ErrInput (the CLI's exit 2).
const KindInput = "input"

// KindLimit is the error kind of a query that went past a resource limit
// (ErrLimit: its memory on a worker, its run time): the query itself is to
// blame, so it fails at once with the reason, and is never placed again on
// another worker, which it would exhaust the same way.
const KindLimit = "limit"

// KindQuery is the error kind of a query whose own computation failed on
// its data (an expression: an overflow, a cast of a value that does not
// fit, a QueryError; or an operator that panicked): it fails the same way
// on any worker, so it fails at once with the reason and is never
// recovered elsewhere. Not bad input (the CLI exits 1, not 2).
const KindQuery = "query"

// QueryError is implemented by errors that blame the query's own
// computation (operators/eval's ExprError), wherever in a chain they sit.
type QueryError interface {
	error
	QueryError() bool
}

// ErrInput marks an error that came back from a worker or the coordinator
// with kind KindInput.
var ErrInput = errors.New("bad input")

// InputError is implemented by errors that blame the query's input
// (runtime/inference's model errors, say), wherever in a chain they sit.
type InputError interface {
	error
	InputError() bool
}

// KindOf classifies err for the wire: KindInput for a parse or bind error,
// an unsupported construct, a file the query names that does not exist, or
// an InputError; KindLimit for a resource limit (ErrLimit); KindQuery for
// the failure of the query's own computation (a QueryError, or an operator
// that panicked); "" for
// everything else.
func KindOf(err error) string {
	if err == nil || errors.Is(err, planner.ErrInfeasible) {
		// Objectives no plan meets are positioned like a binding
		// problem, but the query is well formed: a failure (exit 1).
		return ""
	}
	var le *lang.Error
	var be bind.Errors
	var bi *bind.Error
	var ie InputError
	if errors.Is(err, fs.ErrNotExist) || errors.As(err, &le) || errors.As(err, &be) || errors.As(err, &bi) || errors.Is(err, exec.ErrUnsupported) ||
		errors.Is(err, ErrInput) || errors.As(err, &ie) && ie.InputError() {
		return KindInput
	}
	if errors.Is(err, ErrLimit) || errors.Is(err, exec.ErrTooManyPartitions) {
		return KindLimit
	}
	// An operator that panicked (a defect, met by this query's data) would
	// panic the same on any worker.
	var qe QueryError
	if errors.As(err, &qe) && qe.QueryError() || errors.Is(err, dataflow.ErrPanic) {
		return KindQuery
	}
	return ""
}

// remoteError is an error received as text with its kind.
type remoteError struct {
	msg  string
	kind string
}

func (e *remoteError) Error() string { return e.msg }

func (e *remoteError) Is(target error) bool {
	return target == ErrInput && e.kind == KindInput || target == ErrLimit && e.kind == KindLimit
}

// QueryError keeps KindQuery through the wire (it has no sentinel: the
// CLI treats it as any failure).
func (e *remoteError) QueryError() bool { return e.kind == KindQuery }

// RemoteError rebuilds an error that crossed NATS as text and kind.
func RemoteError(msg, kind string) error { return &remoteError{msg: msg, kind: kind} }
