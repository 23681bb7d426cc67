package bind_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/logical"
)

func bindOne(t *testing.T, b *bind.Binder, src string) *logical.Plan {
	t.Helper()
	st, err := lang.ParseStatement("q.sql", src)
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.Bind(st)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// now() is one instant per query, as DuckDB's (the statement's start): the
// binder folds every call to the same constant.
func TestNowIsOneInstantPerQuery(t *testing.T) {
	cat, err := catalog.LoadFile("testdata/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 25, 18, 0, 0, 123456789, time.UTC)
	calls := 0
	b := bind.New(cat)
	b.Now = func() time.Time { calls++; return at }
	p := bindOne(t, b, `SELECT now() AS a, now() + INTERVAL '1' SECOND AS b FROM sensors WHERE now() > TIMESTAMP '2020-01-01'`)
	if calls != 1 {
		t.Fatalf("the clock was read %d times, want once", calls)
	}
	got := logical.Format(p.Root, nil)
	// now() + INTERVAL '1' SECOND folds to the instant a second later.
	want, later := "TIMESTAMP '2026-11-25 18:00:00.123456'", "TIMESTAMP '2026-11-25 18:00:01.123456'"
	if n := strings.Count(got, want); n != 2 || strings.Count(got, later) != 1 {
		t.Fatalf("want now() folded to %s twice and to %s once, got %d in\n%s", want, later, n, got)
	}
}
