package cluster_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/deploy"
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
