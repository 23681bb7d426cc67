package cluster_test

import (
	"os"
	"testing"

	"github.com/tierflow/tierflow/internal/testenv"
)

// TestMain runs this package's parallel tests eight at a time rather than
// one per core: they wait on rate-limited streams, shaped links and
// restarts, each on a cluster and NATS server of its own (see "Tests in
// parallel", cluster_test.go).
func TestMain(m *testing.M) {
	testenv.WaitingParallel(8)
	os.Exit(m.Run())
}
