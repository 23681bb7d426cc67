package bind_test

import (
	"errors"
	"testing"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
)

// TestCreateReplacesTheCatalogBesideTheScript: a catalog found beside the
// script (Catalog.BaseFile) is a base: the script's CREATE of a name it has
// replaces the entry (it failed with "already exists"); IF NOT EXISTS keeps
// it; a catalog the user named, and the script's own entries, still make a
// second CREATE fail.
func TestCreateReplacesTheCatalogBesideTheScript(t *testing.T) {
	const yaml = `streams:
  - {name: shelf, source: nats, subject: s, format: arrow, columns: [{name: id, type: BIGINT}]}
`
	apply := func(cat *catalog.Catalog, src string) error {
		script, err := lang.Parse("q.sql", src)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range script.Statements {
			if _, err := bind.Apply(cat, st); err != nil {
				return err
			}
		}
		return nil
	}
	load := func(base bool) *catalog.Catalog {
		cat, err := catalog.Parse("dir/catalog.yaml", []byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		if base {
			cat.BaseFile = "dir/catalog.yaml"
		}
		return cat
	}
	create := "CREATE STREAM shelf (id BIGINT, label VARCHAR) FROM NATS 'other' FORMAT JSON;"

	cat := load(true)
	if err := apply(cat, create); err != nil {
		t.Fatalf("CREATE over the catalog beside the script: %v", err)
	}
	if s := cat.Stream("shelf"); s == nil || s.Subject != "other" || len(cat.Streams) != 1 {
		t.Errorf("the script's CREATE did not replace the entry: %+v", cat.Streams)
	}
	if err := apply(cat, create); !errors.Is(err, catalog.ErrExists) {
		t.Errorf("a second CREATE of the script's own stream: %v, want ErrExists", err)
	}

	cat = load(true)
	if err := apply(cat, "CREATE STREAM IF NOT EXISTS shelf (id BIGINT) FROM NATS 'other' FORMAT JSON;"); err != nil || cat.Stream("shelf").Subject != "s" {
		t.Errorf("IF NOT EXISTS replaced the catalog's entry (%v, subject %q)", err, cat.Stream("shelf").Subject)
	}

	if err := apply(load(false), create); !errors.Is(err, catalog.ErrExists) {
		t.Errorf("CREATE over a catalog named by --catalog: %v, want ErrExists", err)
	}
}
