package main

import (
	"errors"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/runtime/inference"
)

// checkBeforeStart binds the script's queries against cat as the run will,
// and fails on what no run gets past: a name nothing declares (a table,
// stream, model or sink) and a model called with none of its variant files
// there. It costs a bind; the embedded cluster's start costs seconds, and
// `run` reported both only once its workers were up. Whatever else goes
// wrong (a file an earlier INSERT writes, a schema read at run time) is left
// to the run, and so is everything after it: the check stops there.
func checkBeforeStart(path, src string, cat *catalog.Catalog, base string) error {
	script, err := lang.Parse(path, src)
	if err != nil {
		return nil // run reports it
	}
	cat = cat.Clone()
	cat.Files = exec.FileSchemas{BaseDir: base}
	for _, st := range script.Statements {
		if ok, err := bind.Apply(cat, st); ok {
			if err != nil {
				return nil
			}
			continue
		}
		var target lang.Statement
		switch s := st.(type) {
		case *lang.Query, *lang.Insert:
			target = s
		case *lang.Explain:
			target = s.Target()
		default:
			continue
		}
		plan, err := bind.New(cat).Bind(target)
		if err != nil {
			if errors.Is(err, catalog.ErrUnknown) {
				return err
			}
			return nil
		}
		if err := modelFilesThere(plan.Root, base); err != nil {
			return err
		}
	}
	return nil
}

// modelFilesThere fails when a model the plan calls has no variant whose
// file can be found (the planner may pick any of them; one is enough). The
// error is the runtime's for the first variant, at the entry naming it.
func modelFilesThere(root logical.Node, base string) error {
	var missing error
	logical.Walk(root, func(n logical.Node) bool {
		lm, ok := n.(*logical.LateralModel)
		if !ok || lm.Model == nil || missing != nil {
			return missing == nil
		}
		var first error
		for _, v := range lm.Model.Variants {
			if v.File == "" {
				return true // not a file's to say (the run says what it lacks)
			}
			_, err := inference.ModelFile(v, base)
			if err == nil {
				return true
			}
			if first == nil {
				first = err
			}
		}
		missing = first
		return missing == nil
	})
	return missing
}
