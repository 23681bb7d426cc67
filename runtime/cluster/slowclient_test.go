package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// stalledCSV is a client's result writer that takes nothing until opened
// (a terminal that cannot keep up).
type stalledCSV struct {
	open chan struct{}
	w    sinks.Writer
}

func (s *stalledCSV) Write(rec arrow.Record) error { <-s.open; return s.w.Write(rec) }
func (s *stalledCSV) Close() error                 { return s.w.Close() }

// TestSlowClientLosesNoResults: a client that takes its results slower
// than the workers send them (thousands of result messages pile up while
// it stalls) still gets every row: the results subscription buffers
// instead of dropping as a slow consumer.
func TestSlowClientLosesNoResults(t *testing.T) {
	t.Parallel() // see "Tests in parallel" (cluster_test.go)
	f := clustertest.NewFixture(t, 3000)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: f.Infra, Heartbeat: 100 * time.Millisecond, Placement: coordinator.PlaceRules})
	defer c.Close()
	script := f.Script
	script.Source = strings.Replace(clustertest.Query, "SELECT s.site, count(*) AS n", "SELECT s.site, r.ts, r.temperature", 1)
	script.Source = script.Source[:strings.Index(script.Source, "GROUP BY")] + ";\n"
	script.BatchSize = 1 // one result message per row
	want := clustertest.Local(t, script)
	var got bytes.Buffer
	out := &stalledCSV{open: make(chan struct{}), w: sinks.NewCSV(&got)}
	done := make(chan error, 1)
	go func() { _, err := c.Run(ctx, script, out); done <- err }()
	clustertest.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		for _, q := range c.Coordinator.Queries() {
			if q.State == deploy.StateFinished {
				return nil
			}
		}
		return errors.New("the query has not finished")
	})
	close(out.open)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if err := clustertest.SameRows(got.String(), want); err != nil {
		t.Fatal(err)
	}
}
