package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/runtime/cluster"
)

// scriptInputs is where a command that reads a script (run, explain,
// explain --analyze, submit) takes its catalog and infrastructure from, the
// one rule all of them follow, so that explain plans what run runs:
//
//  1. the file a flag names (--catalog, --infra);
//  2. else NAME.catalog.yaml / NAME.infra.yaml beside the script NAME.sql;
//  3. else catalog.yaml / infra.yaml beside the script;
//  4. else no catalog (the script declares what it uses), and the built-in
//     infrastructure: one worker on each of an edge, a hub and a cloud
//     tier, on this machine, at no cost (cluster.DefaultInfra).
//
// A catalog found beside the script (2, 3) is a base the script builds on:
// its CREATE of a name the file has replaces the file's entry. A catalog
// named by --catalog is the user's own: a CREATE of a name it has fails.
// Each command says on stderr what it loaded (describe).
type scriptInputs struct {
	catalog, infra string // "" for none, or the built-in infrastructure
	// catalogBeside, infraBeside: found beside the script, not named.
	catalogBeside, infraBeside bool
}

// inputsFor applies the rule to the script at path ("-" or "" is stdin:
// only flags apply).
func inputsFor(g globals, path string) scriptInputs {
	in := scriptInputs{catalog: g.catalog, infra: g.infra}
	if in.catalog == "" {
		in.catalog = besideScript(path, "catalog")
		in.catalogBeside = in.catalog != ""
	}
	if in.infra == "" {
		in.infra = besideScript(path, "infra")
		in.infraBeside = in.infra != ""
	}
	return in
}

// besideScript is NAME.kind.yaml, else kind.yaml, in the script's
// directory, or "" when neither exists.
func besideScript(path, kind string) string {
	if path == "" || path == "-" || path == "<stdin>" {
		return ""
	}
	dir := filepath.Dir(path)
	stem := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	for _, name := range []string{stem + "." + kind + ".yaml", kind + ".yaml"} {
		if p := filepath.Join(dir, name); fileExists(p) {
			return p
		}
	}
	return ""
}

// loadCatalog reads the catalog (an empty one without a file).
func (in scriptInputs) loadCatalog() (*catalog.Catalog, error) {
	if in.catalog == "" {
		return &catalog.Catalog{}, nil
	}
	cat, err := catalog.LoadFile(in.catalog)
	if err != nil {
		return nil, badInput(err)
	}
	if in.catalogBeside {
		cat.BaseFile = in.catalog
	}
	return cat, nil
}

// loadInfra reads the infrastructure (the built-in one without a file).
func (in scriptInputs) loadInfra() (*infra.Infra, error) { return loadInfra(in.infra) }

// builtinInfra is what describe says of the built-in infrastructure.
const builtinInfra = "built-in (a worker on each of edge, hub and cloud, on this machine)"

// describe writes the line saying what was loaded and why, as every
// command that follows the rule prints it on stderr; noInfra says what is
// used without an infrastructure file (builtinInfra, or a cluster's).
func (in scriptInputs) describe(w io.Writer, noInfra string) {
	origin := func(path string, beside bool, flag string) string {
		if beside {
			return path + " (beside the script)"
		}
		return path + " (" + flag + ")"
	}
	cat := "none (the script's own CREATEs)"
	if in.catalog != "" {
		cat = origin(in.catalog, in.catalogBeside, "--catalog")
	}
	inf := noInfra
	if in.infra != "" {
		inf = origin(in.infra, in.infraBeside, "--infra")
	}
	fmt.Fprintf(w, "-- catalog %s; infrastructure %s\n", cat, inf)
}

// loadInfra reads the infrastructure file at path; without one, the
// default that `tierflow run` starts its embedded cluster on (one worker on
// each of an edge, a hub and a cloud tier), so that explain plans a query
// on the workers run would run it on.
func loadInfra(path string) (*infra.Infra, error) {
	if path == "" {
		return cluster.DefaultInfra(), nil
	}
	inf, err := infra.LoadFile(path)
	if err != nil {
		return nil, badInput(err)
	}
	return inf, nil
}
