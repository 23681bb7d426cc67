package bind_test

import (
	"errors"
	"testing"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
)

// An objective the planner does not act on is refused at its position with
// ErrNotSupported; ACCURACY, THROUGHPUT, (measured) LATENCY and BUDGET bind.
func TestObjectivesNotHonouredAreRefused(t *testing.T) {
	cat, err := catalog.LoadFile("testdata/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		with string
		col  int
	}{
		{"PRIORITY BEST_EFFORT", 34},
		{"ACCURACY >= 0.5, THROUGHPUT >= 1 PER SECOND, LATENCY <= 2 SECONDS", 0},
		{"BUDGET <= 1 PER HOUR, THROUGHPUT >= 1 PER SECOND", 0},
	} {
		src := "SELECT camera FROM shelves WITH (" + c.with + ")"
		s, err := lang.Parse("q.sql", src)
		if err != nil {
			t.Fatal(err)
		}
		_, err = bind.New(cat).Bind(s.Statements[0])
		if c.col == 0 {
			if err != nil {
				t.Errorf("%s: %v", c.with, err)
			}
			continue
		}
		var es bind.Errors
		if !errors.Is(err, bind.ErrNotSupported) || !errors.As(err, &es) || es[0].Pos.Col != c.col {
			t.Errorf("%s: got %v, want ErrNotSupported at column %d", c.with, err, c.col)
		}
	}
}
