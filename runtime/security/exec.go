package security

import (
	"fmt"
	"path/filepath"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/inference"
)

// ConfineScript keeps a submitted query to r, on a worker or on the
// coordinator that compiles it: its catalog file is checked before it is
// read, every file stream, table and sink when the executor opens it
// (exec.Options.Confine), and every model file before the model runtime
// loads it. Each is opened by its resolved path, so a symlink swapped in
// after the check is not followed out. Errors are bad input
// (deploy.ErrInput): the query named the file. nil r confines nothing.
func (r *Roots) ConfineScript(sc *deploy.Script, eo *exec.Options) error {
	if r == nil {
		return nil
	}
	if sc.Catalog != "" {
		real, err := r.Check(abs(sc.Catalog))
		if err != nil {
			return fmt.Errorf("%w: catalog: %w", deploy.ErrInput, err)
		}
		sc.Catalog = real
	}
	eo.Confine = func(p string) (string, error) {
		real, err := r.Check(abs(p))
		if err != nil {
			return "", fmt.Errorf("%w: %w", deploy.ErrInput, err)
		}
		return real, nil
	}
	if lateral := eo.Lateral; lateral != nil {
		eo.Lateral = func(n *logical.LateralModel, in *arrow.Schema) (func() (dataflow.Operator, error), *arrow.Schema, error) {
			// The model is this build's own (bound from the script just
			// now), so pointing its variants at the checked files changes
			// no one else's.
			for _, v := range n.Model.Variants {
				if v.File == "" {
					continue
				}
				p, err := inference.ModelFile(v, "")
				if err != nil {
					return nil, nil, err
				}
				real, err := r.Check(abs(p))
				if err != nil {
					return nil, nil, fmt.Errorf("%w: model %s variant %s: %w", deploy.ErrInput, n.Model.Name, v.Name, err)
				}
				v.File = real
			}
			return lateral(n, in)
		}
	}
	return nil
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
