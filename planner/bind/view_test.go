package bind_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/logical"
)

// apply runs CREATE/DROP statements against cat.
func apply(t *testing.T, cat *catalog.Catalog, src string) error {
	t.Helper()
	s, err := lang.Parse("ddl.sql", src)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range s.Statements {
		if _, err := bind.Apply(cat, st); err != nil {
			return err
		}
	}
	return nil
}

// A view is its query, bound at each use as a subquery: over a table a
// table, over a stream a stream; its column list renames; DROP VIEW removes
// it; CREATE checks its query.
func TestViews(t *testing.T) {
	cat, err := catalog.LoadFile("testdata/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := apply(t, cat, `CREATE VIEW big (s, place) AS SELECT sensor, site FROM sensors WHERE sensor > 10;
		CREATE VIEW hot AS SELECT sensor, temperature FROM readings WHERE temperature > 30`); err != nil {
		t.Fatal(err)
	}
	b := bind.New(cat)
	p := bindOne(t, b, `SELECT place, count(*) FROM big JOIN cameras ON big.place = cameras.store GROUP BY place`)
	got := logical.Format(p.Root, nil)
	if !strings.Contains(got, "Scan Table sensors") || !strings.Contains(got, "Filter (CAST(sensor AS BIGINT) > 10)") {
		t.Fatalf("the view's query is not in the plan:\n%s", got)
	}
	p = bindOne(t, b, `SELECT h.sensor, max(temperature) FROM hot h GROUP BY h.sensor`)
	if got := logical.Format(p.Root, nil); !strings.Contains(got, "Scan Stream readings") {
		t.Fatalf("a view over a stream reads the stream:\n%s", got)
	}
	for _, c := range []struct{ src, want string }{
		{`CREATE VIEW big AS SELECT 1`, "already exists"},
		{`CREATE VIEW v AS SELECT nope FROM sensors`, `unknown column "nope"`},
		{`CREATE VIEW v (a, b, c) AS SELECT sensor FROM sensors`, "names 3 columns, its query has 1"},
		{`DROP VIEW nothing`, `no view "nothing"`},
	} {
		if err := apply(t, cat, c.src); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.src, err, c.want)
		}
	}
	if err := apply(t, cat, `CREATE OR REPLACE VIEW big AS SELECT site FROM sensors; DROP VIEW hot; DROP VIEW IF EXISTS hot`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Bind(mustParse(t, `SELECT * FROM hot`)); err == nil || !strings.Contains(err.Error(), `unknown stream, table or view "hot"`) {
		t.Fatalf("a dropped view: %v", err)
	}
	if _, err := b.Bind(mustParse(t, `SELECT place FROM big`)); err == nil {
		t.Fatal("the replaced view still has its old columns")
	}
	// A view that reads itself, through another.
	cat.Views = append(cat.Views, &catalog.View{Name: "a", SQL: "SELECT * FROM b"}, &catalog.View{Name: "b", SQL: "SELECT * FROM a"})
	if _, err := b.Bind(mustParse(t, `SELECT * FROM a`)); err == nil || !strings.Contains(err.Error(), "reads itself") {
		t.Fatalf("a view reading itself: %v", err)
	}
}

func mustParse(t *testing.T, src string) lang.Statement {
	t.Helper()
	st, err := lang.ParseStatement("q.sql", src)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// A FROM item's column list renames its columns in order; more names than
// columns, or a list on a table without an alias, are errors at the item.
func TestFromColumnLists(t *testing.T) {
	cat, err := catalog.LoadFile("testdata/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := bind.New(cat)
	bindOne(t, b, `SELECT c_count, count(*) FROM (SELECT site, count(sensor) FROM sensors GROUP BY site) AS c_orders (c_site, c_count) GROUP BY c_count`)
	bindOne(t, b, `SELECT k, store FROM cameras AS c (k) WHERE c.k > 3`)
	for _, c := range []struct{ src, want string }{
		{`SELECT * FROM (SELECT sensor FROM sensors) AS x (a, b)`, "x names 2 columns, the relation has 1"},
		{`SELECT * FROM cameras (a)`, "a column list needs an alias"},
		{`SELECT sensor FROM (SELECT sensor FROM sensors) AS x (a)`, `unknown column "sensor"`},
	} {
		_, err := b.Bind(mustParse(t, c.src))
		var be bind.Errors
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &be) {
			t.Errorf("%s: %v, want %q", c.src, err, c.want)
		}
	}
}
