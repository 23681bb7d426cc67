package lang

import (
	"strings"
	"testing"
)

// TestLateralCallOptions: a model call takes WITH (key = value, ...) before
// its alias, prints back the same, and a call without an alias followed by
// the query's objectives still reads them as objectives.
func TestLateralCallOptions(t *testing.T) {
	src := `SELECT c.label FROM s CROSS JOIN LATERAL m(s.x) WITH (max_batch = 16, max_delay_ms = 2.5) AS c(label, score);
SELECT m.label FROM s CROSS JOIN LATERAL m(s.x) WITH (ACCURACY >= 0.8);
SELECT c.label FROM s CROSS JOIN LATERAL m(s.x) AS c(label, score) WITH (ACCURACY >= 0.8, LATENCY <= 200 MS);`
	sc, err := Parse("q.sql", src)
	if err != nil {
		t.Fatal(err)
	}
	lat := func(i int) (*Lateral, *Query) {
		q := sc.Statements[i].(*Query)
		return q.Select.From[0].Joins[0].Lateral, q
	}
	l, q := lat(0)
	if len(l.Options) != 2 || l.Options[0].Key != "max_batch" || l.Options[1].Key != "max_delay_ms" ||
		l.Options[1].Value.(*NumberLit).Value != "2.5" || l.Alias != "c" || len(q.Objectives) != 0 {
		t.Fatalf("options %+v alias %q", l.Options, l.Alias)
	}
	if l.Options[0].Pos.Line != 1 || l.Options[0].Pos.Column != 55 {
		t.Errorf("option position %v", l.Options[0].Pos)
	}
	l, q = lat(1)
	if len(l.Options) != 0 || len(q.Objectives) != 1 {
		t.Errorf("objectives after an alias-less call: options %+v objectives %d", l.Options, len(q.Objectives))
	}
	l, q = lat(2)
	if len(l.Options) != 0 || len(q.Objectives) != 2 {
		t.Errorf("objectives after an alias: options %+v objectives %d", l.Options, len(q.Objectives))
	}
	out := Format(sc)
	if !strings.Contains(out, "LATERAL m(s.x) WITH (max_batch = 16, max_delay_ms = 2.5) AS c(label, score)") {
		t.Errorf("printed:\n%s", out)
	}
	again, err := Parse("q.sql", out)
	if err != nil || Format(again) != out {
		t.Errorf("the printed form does not parse back to itself: %v\n%s", err, out)
	}
	if _, err := Parse("q.sql", "SELECT 1 FROM s CROSS JOIN LATERAL m(s.x) WITH (max_batch 16) AS c(l);"); err == nil {
		t.Error("an option without = should not parse")
	}
}
