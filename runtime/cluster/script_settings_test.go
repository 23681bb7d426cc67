package cluster_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
)

// TestRunScriptSetReachesThePlanner: a script's SET planner.* plans the
// queries after it on the coordinator, as SET does in the REPL; a query
// before it plans with the defaults.
func TestRunScriptSetReachesThePlanner(t *testing.T) {
	f := clustertest.NewFixture(t, 300)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: f.Infra, Heartbeat: 100 * time.Millisecond})
	defer c.Close()
	const q = "\nSELECT sensor FROM readings WHERE temperature > 39.8;\n"
	src := f.Script.Source + q + "SET planner.strategy = 'exhaustive';" + q
	var log bytes.Buffer
	err := c.RunScript(ctx, f.Script.Filename, src, cluster.ScriptOptions{Stdout: &bytes.Buffer{}, Log: &log,
		NewOutput: func() (sinks.Writer, error) { return sinks.NewCSV(&bytes.Buffer{}), nil }})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	qs := c.Coordinator.Queries()
	// The fixture's own query and the first one here plan with the
	// defaults, the one after SET exhaustively.
	var notes []string
	for _, q := range qs {
		notes = append(notes, q.Planner)
	}
	joined := strings.Join(notes, "\n")
	if len(qs) != 3 || strings.Count(joined, "optimizer (exhaustive)") != 1 || strings.Count(joined, "optimizer (auto)") != 2 {
		t.Fatalf("planner notes:\n%s", joined)
	}
}
