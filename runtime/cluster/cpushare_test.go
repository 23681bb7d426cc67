package cluster_test

import (
	"runtime"
	"testing"

	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/runtime/cluster"
)

// A worker's sessions get its type's vCPUs, capped at an equal share of this
// machine's cores among the workers it runs with, and never fewer than one.
func TestCPUShare(t *testing.T) {
	cores := runtime.NumCPU()
	big := infra.Machine{Name: "c", Type: &infra.WorkerType{Name: "x64", VCPUs: 64}}
	small := infra.Machine{Name: "e", Type: &infra.WorkerType{Name: "x1", VCPUs: 1}}
	untyped := infra.Machine{Name: "u"}
	for _, c := range []struct {
		m    infra.Machine
		n    int
		want int
	}{
		{big, 1, min(64, cores)},
		{big, cores * 4, 1},
		{small, 1, 1},
		{untyped, 2, max(1, cores/2)},
		{untyped, 0, cores},
	} {
		if got := cluster.CPUShare(c.m, c.n); got != c.want {
			t.Errorf("CPUShare(%s, %d workers) = %d, want %d (%d cores)", c.m.Name, c.n, got, c.want, cores)
		}
	}
}

// The process beside worker processes keeps the cores they leave, and one
// when they take them all.
func TestHostShare(t *testing.T) {
	cores := runtime.NumCPU()
	for _, c := range []struct{ workers, want int }{
		{0, cores},
		{1, max(1, cores-1)},
		{cores, 1},
		{cores * 3, 1},
	} {
		if got := cluster.HostShare(c.workers); got != c.want {
			t.Errorf("HostShare(%d) = %d, want %d (%d cores)", c.workers, got, c.want, cores)
		}
	}
}
