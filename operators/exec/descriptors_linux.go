package exec

import (
	"os"
	"syscall"
)

// descriptorsFree is how many more files this process may open: its
// RLIMIT_NOFILE less the descriptors open now; false when unknown.
func descriptorsFree() (int, bool) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, false
	}
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, false
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0, false
	}
	// The directory read is one of them.
	return int(lim.Cur) - (len(names) - 1), true
}
