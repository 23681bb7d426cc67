// Package ortlib finds the ONNX Runtime shared library that the setup step caches.
//
// It owns only the search (flag, environment, cache) and the report of where it
// looked; loading the library and creating sessions belong to the inference runtime.
// It must not import anything above runtime.
package ortlib

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Version is the ONNX Runtime release the setup step installs (scripts/lib.sh).
const Version = "1.24.3"

// EnvVar overrides the cached library when no flag is given.
const EnvVar = "TIERFLOW_ORT_LIB"

// LibName is the file the npm package ships for linux/x64.
const LibName = "libonnxruntime.so.1"

// CacheRel is the library's place relative to the repository root.
var CacheRel = filepath.Join(".cache", "onnxruntime", Version, LibName)

// ErrNotFound is returned when no candidate exists; the wrapping error lists them.
var ErrNotFound = errors.New("ONNX Runtime library not found")

// Candidate is one place that was searched, and why it was searched.
type Candidate struct {
	Path   string
	Source string // "flag", "env TIERFLOW_ORT_LIB", "cache"
}

// Candidates lists, in order, where Find looks: the explicit path (a flag), the
// environment variable, then the setup cache next to the executable and above the
// working directory (tests run from package folders).
func Candidates(explicit string) []Candidate {
	if explicit != "" {
		return []Candidate{{explicit, "flag"}}
	}
	if env := os.Getenv(EnvVar); env != "" {
		return []Candidate{{env, "env " + EnvVar}}
	}
	var out []Candidate
	seen := map[string]bool{}
	add := func(dir string) {
		p := filepath.Join(dir, CacheRel)
		if !seen[p] {
			seen[p] = true
			out = append(out, Candidate{p, "cache"})
		}
	}
	if exe, err := os.Executable(); err == nil {
		// bin/tierflow -> repository root
		add(filepath.Dir(filepath.Dir(exe)))
	}
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			add(dir)
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				break
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return out
}

// Find returns the first candidate that exists. An explicit flag or environment
// value that does not exist is an error on its own: falling back silently would
// load a library the user did not ask for.
func Find(explicit string) (string, error) {
	cands := Candidates(explicit)
	for _, c := range cands {
		if st, err := os.Stat(c.Path); err == nil && !st.IsDir() {
			return c.Path, nil
		}
	}
	var b strings.Builder
	for _, c := range cands {
		fmt.Fprintf(&b, "\n  %s (%s): missing", c.Path, c.Source)
	}
	return "", fmt.Errorf("%w; looked in:%s\nrun scripts/setup.sh (or make setup), pass --ort-lib, or set %s", ErrNotFound, b.String(), EnvVar)
}
