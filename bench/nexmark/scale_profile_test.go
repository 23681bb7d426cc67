package nexmark

import (
	"os"
	"path/filepath"
	"testing"
)

// With --cpuprofile, each run also profiles this process (the NATS server,
// the coordinator, the sink) into its size's folder, named for the query
// and the repetition, beside the worker processes' profiles; without it,
// or with the workers in this process, nothing is written.
func TestScaleProfilesTheBenchProcessPerRun(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "2-workers"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := ScaleOptions{ProfileDir: dir, Processes: true}
	stop, err := o.profileBench(2, "q4", 0)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	fi, err := os.Stat(filepath.Join(dir, "2-workers", "bench-q4-r1.pprof"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() == 0 {
		t.Fatal("the profile is empty: pprof writes its header even for a run with no samples")
	}
	for _, o := range []ScaleOptions{{Processes: true}, {ProfileDir: dir}} {
		stop, err := o.profileBench(1, "q5", 0)
		if err != nil {
			t.Fatal(err)
		}
		stop()
	}
	if _, err := os.Stat(filepath.Join(dir, "1-workers")); !os.IsNotExist(err) {
		t.Fatalf("a run without --cpuprofile or with embedded workers wrote a profile folder: %v", err)
	}
	// A folder that cannot take the file is an error naming the flag.
	if _, err := (ScaleOptions{ProfileDir: filepath.Join(dir, "missing"), Processes: true}).profileBench(2, "q4", 0); err == nil {
		t.Fatal("no error for a profile folder that does not exist")
	}
}
