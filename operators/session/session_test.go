package session

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
)

func statements(t *testing.T, src string) []lang.Statement {
	t.Helper()
	s, err := lang.Parse("s.sql", src)
	if err != nil {
		t.Fatal(err)
	}
	return s.Statements
}

// TestSetChangesWhatFollows: SET reaches the planner's options and the
// executor's settings; a bad one changes nothing and is ErrInvalid at its
// position.
func TestSetChangesWhatFollows(t *testing.T) {
	s := New()
	for _, st := range statements(t, "SET planner.strategy = 'exhaustive'; SET planner.beam_width = 4; SET exec.on_error = 'skip'; SET exec.max_delay = '5s'; SET exec.replay = true; SET planner.adapt_inputs = 'UINT8'; SET exec.state_ttl = '90s';") {
		if err := s.Set(st.(*lang.Set)); err != nil {
			t.Fatal(err)
		}
	}
	if s.Planner.Strategy != "exhaustive" || s.Planner.Optimize.BeamModelSelection != 4 || s.Planner.Optimize.BeamWorkerAssignment != 4 ||
		s.Planner.AdaptInputs != "uint8" || PlannerValues(s.Values())["planner.adapt_inputs"] != "uint8" {
		t.Fatalf("planner options: %+v", s.Planner)
	}
	x := Exec{MaxDelay: time.Second, OnError: sources.Fail, BatchSize: 10}
	if err := x.Apply(s.Values()); err != nil || x.OnError != sources.Skip || x.MaxDelay != 5*time.Second || x.BatchSize != 10 || !x.Replay || x.StateTTL != 90*time.Second {
		t.Fatalf("exec: %+v, %v", x, err)
	}
	for _, c := range []struct{ src, want string }{
		{"SET exec.batch_size = 0;", `s.sql:1:1: SET exec.batch_size: want a positive integer, got "0"`},
		{"SET planner.strategy = 'fastest';", `s.sql:1:1: SET planner.strategy: unknown strategy "fastest"`},
		{"SET exec.replay = 'sometimes';", `s.sql:1:1: SET exec.replay: want true or false, got "sometimes"`},
		{"SET exec.state_ttl = 'a while';", `s.sql:1:1: SET exec.state_ttl: want a duration such as '1h', got "a while"`},
		{"SET nope = 1;", "s.sql:1:5: SET nope: unknown setting (want one of exec.batch_size"},
		// At the name, with the one meant (it was 1:1, at SET, and listed all).
		{"SET  planner.strategi = 'exhaustive';", "s.sql:1:6: SET planner.strategi: unknown setting (did you mean \"planner.strategy\"?)"},
		{"SET planner.adapt_inputs = 'jpeg';", `s.sql:1:1: SET planner.adapt_inputs: want resize, uint8 or off, got "jpeg"`},
	} {
		err := s.Set(statements(t, c.src)[0].(*lang.Set))
		if !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v", c.src, err)
		}
	}
	if s.Planner.Strategy != "exhaustive" || len(s.Values()) != 7 {
		t.Fatalf("a bad SET changed the settings: %+v %v", s.Planner, s.Values())
	}
}

// TestListings: SHOW and DESCRIBE answer from the catalog; an unknown name
// is catalog.ErrUnknown (and ErrInvalid) with a suggestion.
func TestListings(t *testing.T) {
	cat := &catalog.Catalog{}
	sts := statements(t, "CREATE STREAM readings (sensor INT, ts TIMESTAMP) FROM FILE 'r.csv' FORMAT CSV; SHOW STREAMS; SHOW TIERS;")
	if _, err := bind.Apply(cat, sts[0]); err != nil {
		t.Fatal(err)
	}
	l, err := Show(sts[1].(*lang.Show), cat, nil, nil)
	if err != nil || len(l.Rows) != 1 || l.Rows[0][0] != "readings" || l.Rows[0][2] != "file 'r.csv' csv" {
		t.Fatalf("SHOW STREAMS: %+v %v", l, err)
	}
	if _, err := Show(sts[2].(*lang.Show), cat, nil, nil); !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), "s.sql:1:") {
		t.Fatalf("SHOW TIERS without an infrastructure: %v", err)
	}
	d, err := Describe("readings", "s.sql:2:1", cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := d.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "Stream readings (file 'r.csv' csv)\n| column | type      |\n+--------+-----------+\n| sensor | INT       |\n| ts     | TIMESTAMP |\n(2 rows)\n"
	if b.String() != want {
		t.Fatalf("DESCRIBE:\n%s\nwant:\n%s", b.String(), want)
	}
	_, err = Describe("reading", "s.sql:2:1", cat, nil)
	if !errors.Is(err, catalog.ErrUnknown) || !errors.Is(err, ErrInvalid) || err.Error() != `s.sql:2:1: no model, stream, table, sink or function named "reading" (did you mean "readings"?)` {
		t.Fatalf("unknown name: %v", err)
	}
	if f := Functions(nil, "tum"); len(f.Rows) != 1 || f.Rows[0][0] != "tumble" {
		t.Fatalf("functions: %+v", f.Rows)
	}
}

// SHOW FUNCTIONS leaves out the functions only the binder calls
// (string_agg ... ORDER BY binds to string_agg_sorted over sort_key), which
// stay in the registry for it.
func TestFunctionsHideInternalOnes(t *testing.T) {
	listed := map[string]bool{}
	for _, r := range Functions(nil, "").Rows {
		listed[r[0]] = true
	}
	for _, name := range []string{"sort_key", "string_agg_sorted"} {
		if listed[name] {
			t.Errorf("SHOW FUNCTIONS lists internal %s", name)
		}
		if f, ok := expr.Builtins().Lookup(name); !ok || !f.Internal {
			t.Errorf("%s is no longer an internal function of the registry", name)
		}
	}
	for _, name := range []string{"string_agg", "upper", "tumble"} {
		if !listed[name] {
			t.Errorf("SHOW FUNCTIONS lacks %s", name)
		}
	}
	if f := Functions(nil, "string_agg"); len(f.Rows) != 1 || f.Rows[0][0] != "string_agg" {
		t.Errorf("functions string_agg*: %+v", f.Rows)
	}
}
