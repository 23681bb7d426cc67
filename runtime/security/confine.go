package security

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrConfined: a submitted query named a file outside the worker's data
// roots (or climbed out of one with .. or a symlink).
var ErrConfined = errors.New("outside the worker's data roots")

// Roots are the directories a worker serves files from (--data-root). A
// query submitted to the cluster reads and writes files only under them;
// `tierflow run` on one's own machine has none and keeps its freedom.
type Roots struct {
	dirs  []string // absolute, symlinks resolved
	given []string // absolute, as given (a path may name a root by either)
}

// NewRoots resolves dirs (each must be an existing directory). No dirs
// give nil Roots, which confine nothing.
func NewRoots(dirs []string) (*Roots, error) {
	if len(dirs) == 0 {
		return nil, nil
	}
	r := &Roots{}
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("--data-root %s: %w", d, err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, fmt.Errorf("--data-root %s: %w", d, err)
		}
		if st, err := os.Stat(real); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("--data-root %s: not a directory", d)
		}
		r.dirs, r.given = append(r.dirs, real), append(r.given, abs)
	}
	return r, nil
}

// NoFiles are Roots under which no file lies: a coordinator of a secured
// cluster without --data-root reads no file a query names (the workers,
// which read them, have their own roots), and says so.
func NoFiles() *Roots { return &Roots{} }

// ErrNoDataRoot: a path refused by NoFiles.
var ErrNoDataRoot = errors.New("this process reads no file a query names (it has no --data-root)")

// Dirs are the resolved roots.
func (r *Roots) Dirs() []string {
	if r == nil {
		return nil
	}
	return slices.Clone(r.dirs)
}

// Check vets path, as a query names it after resolving it against its
// script's directory: no ".." element, and the file, with every symlink
// on the way resolved, lies under one of the roots. It returns the resolved
// path, which is what must be opened (the checked file, not whatever the
// name points at later). A file that does not exist yet (a sink's) is
// checked by its directory. nil Roots allow everything.
func (r *Roots) Check(path string) (string, error) {
	if r == nil {
		return path, nil
	}
	if len(r.dirs) == 0 {
		return "", fmt.Errorf("%w: %s: %w", ErrConfined, path, ErrNoDataRoot)
	}
	if slices.Contains(strings.Split(filepath.ToSlash(path), "/"), "..") {
		return "", fmt.Errorf("%w: %s: paths with .. are refused", ErrConfined, path)
	}
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%w: %s: a relative path that the script's directory does not resolve", ErrConfined, path)
	}
	// A path not even named under a root is refused before the file
	// system is asked anything: the answer must not tell whether a file
	// outside exists.
	if !under(append(r.dirs, r.given...), filepath.Clean(path)) {
		return "", fmt.Errorf("%w: %s is outside %s", ErrConfined, path, strings.Join(r.dirs, ", "))
	}
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		// A file to create: its directory must be inside, and the name
		// itself must not be a (dangling) symlink.
		if _, lerr := os.Lstat(path); lerr == nil {
			return "", fmt.Errorf("%w: %s: a symlink to nowhere", ErrConfined, path)
		}
		dir, derr := filepath.EvalSymlinks(filepath.Dir(path))
		if derr != nil {
			return "", fmt.Errorf("%w: %s: %w", ErrConfined, path, derr)
		}
		real, err = filepath.Join(dir, filepath.Base(path)), nil
	}
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrConfined, path, err)
	}
	if under(r.dirs, real) {
		return real, nil
	}
	if real != path {
		return "", fmt.Errorf("%w: %s resolves to %s, outside %s", ErrConfined, path, real, strings.Join(r.dirs, ", "))
	}
	return "", fmt.Errorf("%w: %s is outside %s", ErrConfined, path, strings.Join(r.dirs, ", "))
}

// under reports whether path lies in one of dirs.
func under(dirs []string, path string) bool {
	for _, d := range dirs {
		if rel, err := filepath.Rel(d, path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// named reports whether path is named under a root (lexically: no file
// system access).
func (r *Roots) named(path string) bool {
	return under(append(r.Dirs(), r.given...), filepath.Clean(path))
}

// ErrSecretsServed: a data root holds a file the process authenticates
// with, which any query could then read and hand to its submitter.
var ErrSecretsServed = errors.New("holds this process's credentials, which any query could read")

// RefuseSecrets fails when a secret (a creds, nkey, TLS key or
// configuration file the process was started with, named by its flag) or
// a sibling of one lies under a root. Siblings count: nats-setup writes
// every role's creds, the account keys and the server's TLS key into one
// directory, so a root holding a worker's creds holds the coordinator's
// too. The check is made once, at start, so that a query never meets it.
func (r *Roots) RefuseSecrets(secrets map[string]string) error {
	if r == nil {
		return nil
	}
	flags := make([]string, 0, len(secrets))
	for flag := range secrets {
		flags = append(flags, flag)
	}
	slices.Sort(flags)
	for _, flag := range flags {
		p := secrets[flag]
		if p == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		dir := filepath.Dir(abs)
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		for i, d := range r.dirs {
			if under([]string{d}, dir) {
				return fmt.Errorf("--data-root %s %w (%s %s): keep secrets outside the data roots", r.given[i], ErrSecretsServed, flag, p)
			}
		}
	}
	return nil
}
