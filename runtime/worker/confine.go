package worker

import (
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// confine keeps a deployed query to the worker's data roots, and its file
// sinks to its owner's directory in them (security.Roots.ConfineOwner).
func (w *Worker) confine(owner string, sc *deploy.Script, eo *exec.Options) error {
	return w.cfg.DataRoots.ConfineOwner(owner, sc, eo)
}
