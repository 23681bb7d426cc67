package deploy

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/exec"
)

type blamed struct{}

func (blamed) Error() string    { return "model file missing" }
func (blamed) InputError() bool { return true }

// Errors that blame the query's input keep that kind through the wire's text.
func TestErrorKindsCrossTheWire(t *testing.T) {
	_, parseErr := lang.Parse("q.sql", "SELEC 1;")
	for _, c := range []struct {
		err  error
		want string
	}{
		{parseErr, KindInput},
		{fmt.Errorf("q.sql:1:8: %w: HOP join", exec.ErrUnsupported), KindInput},
		{fmt.Errorf("build: %w", blamed{}), KindInput},
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
		if errors.Is(back, ErrInput) != (c.want == KindInput) || back.Error() != "worker w1: "+c.err.Error() {
			t.Errorf("%v came back as %v (input %v)", c.err, back, errors.Is(back, ErrInput))
		}
		if KindOf(back) != c.want {
			t.Errorf("a relayed error changed kind: %q", KindOf(back))
		}
	}
}
