package bind_test

import (
	"errors"
	"testing"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
)

// Every objective of WITH (...) binds now (PRIORITY since issue 15); the
// table stays so that the next objective the language grows is refused at
// its position with ErrNotSupported until the planner acts on it.
func TestObjectivesNotHonouredAreRefused(t *testing.T) {
	cat, err := catalog.LoadFile("testdata/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		with string
		col  int
	}{
		{"PRIORITY BEST_EFFORT", 0},
		{"LATENCY <= 50 MS, PRIORITY REALTIME", 0},
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

// PRIORITY is carried into the bound plan; REALTIME without LATENCY is an
// error at the PRIORITY token.
func TestPriorityBinds(t *testing.T) {
	cat, err := catalog.LoadFile("testdata/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		with, want string
		latency    float64
		errCol     int
	}{
		{"PRIORITY REALTIME, LATENCY <= 40 MS", "REALTIME", 40, 0},
		{"PRIORITY BEST_EFFORT", "BEST_EFFORT", 0, 0},
		{"THROUGHPUT >= 1 PER SECOND", "", 0, 0},
		{"THROUGHPUT >= 1 PER SECOND, PRIORITY REALTIME", "", 0, 62},
	} {
		src := "SELECT camera FROM shelves WITH (" + c.with + ")"
		s, err := lang.Parse("q.sql", src)
		if err != nil {
			t.Fatal(err)
		}
		p, err := bind.New(cat).Bind(s.Statements[0])
		if c.errCol > 0 {
			var es bind.Errors
			if !errors.Is(err, bind.ErrBind) || !errors.As(err, &es) || es[0].Pos.Line != 1 || es[0].Pos.Col != c.errCol {
				t.Errorf("%s: got %v, want ErrBind at 1:%d", c.with, err, c.errCol)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.with, err)
		}
		if p.Objectives.Priority != c.want || p.Objectives.LatencyMs != c.latency {
			t.Errorf("%s: priority %q latency %g, want %q %g", c.with, p.Objectives.Priority, p.Objectives.LatencyMs, c.want, c.latency)
		}
	}
}
