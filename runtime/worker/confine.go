package worker

import (
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// confine keeps a deployed query to the worker's data roots
// (security.Roots.ConfineScript).
func (w *Worker) confine(sc *deploy.Script, eo *exec.Options) error {
	return w.cfg.DataRoots.ConfineScript(sc, eo)
}
