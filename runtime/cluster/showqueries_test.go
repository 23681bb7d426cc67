package cluster_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/inference/sched"
)

// TestShowQueriesShowsDrops: SHOW QUERIES has a dropped column, by reason.
func TestShowQueriesShowsDrops(t *testing.T) {
	var b bytes.Buffer
	cluster.WriteQueries(&b, []deploy.QueryInfo{
		{Query: "q-1", State: deploy.StateRunning, Dropped: dataflow.DropCounts{dataflow.DropNullEventTime: 2, dataflow.DropMalformed: 1}},
		{Query: "q-2", State: deploy.StateFinished},
	})
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(lines[0], "dropped") || !strings.Contains(lines[1], "1 malformed, 2 null_event_time") {
		t.Fatalf("SHOW QUERIES:\n%s", b.String())
	}
}

// TestShowQueriesShowsPriorityShareProgress: SHOW QUERIES shows each query's
// priority, per worker the share of its time the query's model batches
// took, and a best-effort query's progress and ETA.
func TestShowQueriesShowsPriorityShareProgress(t *testing.T) {
	var b bytes.Buffer
	cluster.WriteQueries(&b, []deploy.QueryInfo{
		{Query: "q-rt", State: deploy.StateRunning, Priority: "REALTIME", Workers: []string{"edge-1"},
			Sched: map[string]sched.QueryStats{"edge-1": {Query: "q-rt", Share: 0.12}}},
		{Query: "q-be", State: deploy.StateRunning, Priority: "BEST_EFFORT", Workers: []string{"edge-1", "hub-1"},
			Sched:     map[string]sched.QueryStats{"edge-1": {Query: "q-be", Share: 0.5}, "hub-1": {Query: "q-be", Share: 0.25}},
			InputRows: 1000, Progress: 0.4, ETASeconds: 30},
	})
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(lines[0], "priority") || !strings.Contains(lines[0], "busy") || !strings.Contains(lines[0], "progress") ||
		!strings.Contains(lines[1], "REALTIME") || !strings.Contains(lines[1], "edge-1 12%") ||
		!strings.Contains(lines[2], "BEST_EFFORT") || !strings.Contains(lines[2], "edge-1 50%, hub-1 25%") || !strings.Contains(lines[2], "40% eta 30s") {
		t.Fatalf("SHOW QUERIES:\n%s", b.String())
	}
}
