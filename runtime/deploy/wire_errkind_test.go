package deploy

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/functions"
)

type blamed struct{}

func (blamed) Error() string    { return "model file missing" }
func (blamed) InputError() bool { return true }

// Errors that blame the query (its input, a limit, its own computation)
// keep that kind through the wire's text; an expression refused memory is
// not the computation's failure (the worker makes it a limit).
func TestErrorKindsCrossTheWire(t *testing.T) {
	_, parseErr := lang.Parse("q.sql", "SELEC 1;")
	for _, c := range []struct {
		err  error
		want string
	}{
		{parseErr, KindInput},
		{fmt.Errorf("q.sql:1:8: %w: HOP join", exec.ErrUnsupported), KindInput},
		{fmt.Errorf("build: %w", blamed{}), KindInput},
		{fmt.Errorf("%w: query q holds 2 GiB", ErrLimit), KindLimit},
		{fmt.Errorf("project[0] batch: %w", &eval.ExprError{Expr: "(i + 1)", Err: functions.ErrOverflow}), KindQuery},
		{fmt.Errorf("project[0] batch: %w", &eval.ExprError{Expr: "repeat(s, 9)", Err: &dataflow.LimitError{Holder: "project[0]"}}), ""},
		{fmt.Errorf("aggregate[0]: %w", dataflow.Recovered("aggregate[0]", "slice bounds out of range")), KindQuery},
		{errors.New("connection reset"), ""},
		{nil, ""},
	} {
		kind := KindOf(c.err)
		if kind != c.want {
			t.Errorf("KindOf(%v) = %q, want %q", c.err, kind, c.want)
			continue
		}
		if c.err == nil {
			continue
		}
		back := fmt.Errorf("worker w1: %w", RemoteError(c.err.Error(), kind))
		if errors.Is(back, ErrInput) != (c.want == KindInput) || errors.Is(back, ErrLimit) != (c.want == KindLimit) || back.Error() != "worker w1: "+c.err.Error() {
			t.Errorf("%v came back as %v (input %v)", c.err, back, errors.Is(back, ErrInput))
		}
		if KindOf(back) != c.want {
			t.Errorf("a relayed error changed kind: %q", KindOf(back))
		}
	}
}
