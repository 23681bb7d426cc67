package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// SQLPeerBinary is the DuckDB peer's executable. It is built from its
// own Go module (bench/sqlpeer) so that DuckDB, a large cgo library, never
// enters tierflow's own build.
const SQLPeerBinary = "tierflow-sqlpeer"

// FindSQLPeer locates the DuckDB peer of `bench sql` and `bench tpch`, building it from the source tree
// beside this binary (bin/../bench/sqlpeer) when that is where it would be.
func FindSQLPeer(benv *Env) (string, error) {
	if p := os.Getenv("TIERFLOW_SQLPEER"); p != "" {
		return p, nil
	}
	self, err := os.Executable()
	if err == nil {
		dir := filepath.Dir(self)
		beside := filepath.Join(dir, SQLPeerBinary)
		if _, err := os.Stat(beside); err == nil {
			return beside, nil
		}
		if p, err := exec.LookPath(SQLPeerBinary); err == nil {
			return p, nil
		}
		src := filepath.Join(dir, "..", "bench", "sqlpeer")
		if _, err := os.Stat(filepath.Join(src, "go.mod")); err == nil {
			fmt.Fprintf(benv.Err, "-- building %s from %s (once; DuckDB's library makes this take minutes)\n", SQLPeerBinary, src)
			b := exec.Command("go", "build", "-o", beside, ".")
			b.Dir, b.Stdout, b.Stderr = src, benv.Err, benv.Err
			if err := b.Run(); err != nil {
				return "", fmt.Errorf("build %s: %w", SQLPeerBinary, err)
			}
			return beside, nil
		}
	} else if p, err := exec.LookPath(SQLPeerBinary); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("no %s next to this binary, on PATH or in $TIERFLOW_SQLPEER: build it from the source tree with `make bench-sqlpeer`", SQLPeerBinary)
}
