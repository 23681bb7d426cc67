package security

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/relay/natsserver"
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
	// Relative names resolve against the script's directory, which the
	// client chose: one outside the roots becomes the first root, so that
	// resolving never looks at (and tells about) files outside.
	if len(r.dirs) > 0 && (sc.BaseDir == "" || !r.named(abs(sc.BaseDir))) {
		sc.BaseDir = r.dirs[0]
	}
	if len(r.dirs) > 0 && (sc.Filename == "" || !r.named(abs(filepath.Dir(sc.Filename)))) {
		sc.Filename = filepath.Join(sc.BaseDir, filepath.Base(sc.Filename))
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
	// The bind probes the columns of files declared without a list: the
	// same check, before the file is opened.
	sc.Confine = eo.Confine
	if lateral := eo.Lateral; lateral != nil {
		eo.Lateral = func(n *logical.LateralModel, in *arrow.Schema) (func() (dataflow.Operator, error), *arrow.Schema, error) {
			if err := r.ConfineModel(n.Model, ""); err != nil {
				return nil, nil, err
			}
			return lateral(n, in)
		}
	}
	return nil
}

// ConfineModel checks every file of model m's variants (resolved as the
// model runtime does, base being its base directory) against r and points
// each variant at its resolved file. The model is the caller's own (bound
// from the submitted script just now), so no one else's changes.
func (r *Roots) ConfineModel(m *catalog.Model, base string) error {
	if r == nil || m == nil {
		return nil
	}
	for _, v := range m.Variants {
		if v.File == "" {
			continue
		}
		if slices.Contains(strings.Split(filepath.ToSlash(v.File), "/"), "..") {
			return fmt.Errorf("%w: model %s variant %s: %w: %s: paths with .. are refused", deploy.ErrInput, m.Name, v.Name, ErrConfined, v.File)
		}
		p, err := inference.ModelFile(v, base)
		if err != nil {
			return err
		}
		real, err := r.Check(abs(p))
		if err != nil {
			return fmt.Errorf("%w: model %s variant %s: %w", deploy.ErrInput, m.Name, v.Name, err)
		}
		v.File = real
	}
	return nil
}

// ConfineModelArgs wraps the binder's model checker (which reads model
// files) so that it reads none outside r.
func (r *Roots) ConfineModelArgs(check bind.ModelArgChecker, base string) bind.ModelArgChecker {
	if r == nil || check == nil {
		return check
	}
	return func(m *catalog.Model, args []arrow.DataType) (int, error) {
		if err := r.ConfineModel(m, base); err != nil {
			return 0, err
		}
		return check(m, args)
	}
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// ConfineOwner is ConfineScript for a query of owner on a shared worker:
// besides the roots, the files its sinks write lie under the owner's own
// directory in a root (<root>/<owner>/...). Users of one data root read
// the same data, but none replaces a file another reads (a model every
// query loads, another user's table). An anonymous owner (an open
// cluster, where every client is everyone) writes anywhere under the roots.
func (r *Roots) ConfineOwner(owner string, sc *deploy.Script, eo *exec.Options) error {
	if err := r.ConfineScript(sc, eo); err != nil || r == nil || len(r.dirs) == 0 || owner == "" || owner == natsserver.Anonymous {
		return err
	}
	if strings.ContainsAny(owner, `/\`) || owner == "." || owner == ".." {
		return fmt.Errorf("%w: owner %q names no directory", deploy.ErrInput, owner)
	}
	var own, named []string // resolved; and as the roots were given
	for i, d := range r.dirs {
		own = append(own, filepath.Join(d, owner))
		named = append(named, filepath.Join(d, owner), filepath.Join(r.given[i], owner))
	}
	read := eo.Confine
	eo.ConfineWrite = func(p string) (string, error) {
		refused := func() (string, error) {
			return "", fmt.Errorf("%w: %w: %s: a query of %s writes files only under %s", deploy.ErrInput, ErrConfined, p, owner, strings.Join(own, ", "))
		}
		ap := abs(p)
		if !under(named, ap) {
			return refused()
		}
		// The owner's directory, and those below it, come with the first
		// file written there.
		if err := mkdirsUnder(named, filepath.Dir(ap)); err != nil {
			return "", fmt.Errorf("%w: %s: %w", deploy.ErrInput, p, err)
		}
		real, err := read(p)
		if err != nil {
			return "", err
		}
		if !under(own, real) {
			return refused()
		}
		return real, nil
	}
	return nil
}

// mkdirsUnder makes dir's missing directories from the base in bases that
// holds it down, one at a time, and stops at a symlink: a directory is
// never made through a link that may lead out (the check that follows
// refuses such a path).
func mkdirsUnder(bases []string, dir string) error {
	for _, base := range bases {
		rel, err := filepath.Rel(filepath.Dir(base), dir)
		if err != nil || !under([]string{base}, dir) {
			continue
		}
		at := filepath.Dir(base)
		for _, part := range strings.Split(rel, string(filepath.Separator)) {
			at = filepath.Join(at, part)
			info, err := os.Lstat(at)
			switch {
			case err == nil && info.Mode()&os.ModeSymlink != 0:
				return nil
			case err == nil:
				continue
			case !os.IsNotExist(err):
				return err
			}
			if err := os.Mkdir(at, 0o755); err != nil {
				return err
			}
		}
		return nil
	}
	return nil
}
