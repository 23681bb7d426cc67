package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/bench/nexmark"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// textRows keeps each row as text, for comparing runs as sets of lines.
type textRows struct {
	mu   sync.Mutex
	rows []string
}

func (r *textRows) Write(rec arrow.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := 0; i < int(rec.NumRows()); i++ {
		var b strings.Builder
		for j := 0; j < int(rec.NumCols()); j++ {
			fmt.Fprintf(&b, "%v|", functions.ValueAt(rec.Column(j), i))
		}
		r.rows = append(r.rows, b.String())
	}
	return nil
}

func (r *textRows) Close() error { return nil }

func (r *textRows) sorted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.rows)
	slices.Sort(out)
	return out
}

// A keyed window query over a partitioned stream on two worker processes
// answers what the local executor answers over the unsplit file, also when
// one worker is killed -9 mid-query: the survivor reads both partitions
// again from the committed epoch, each with its own watermark, so which
// rows are late and which windows they land in follow from the files alone.
func TestPartitionedKeyedQuerySurvivesAKill(t *testing.T) {
	t.Parallel() // a drill (see "Drills run in parallel", recovery_test.go)
	dir := t.TempDir()
	if _, err := nexmark.Generate(dir, nexmark.Config{Events: 20_000, Seed: 3, Gap: 10 * time.Millisecond}); err != nil { // 200 s of event time: 20 windows
		t.Fatal(err)
	}
	parts, err := nexmark.Partition(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := nexmark.Lookup("q7-max")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	local, err := nexmark.Run(ctx, dir, q, nexmark.Options{Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, row := range local.Rows {
		var b strings.Builder
		for _, v := range row {
			fmt.Fprintf(&b, "%v|", v)
		}
		want = append(want, b.String())
	}
	slices.Sort(want)

	inf, err := infra.Parse("two.yaml", []byte("tiers:\n  - name: cloud\nworker_types:\n  - name: core\n    vcpus: 1\n    memory_gb: 4\n    price: 1\nworkers:\n  - name: w\n    type: core\n    tier: cloud\n    count: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	c, err := cluster.StartProcesses(ctx, cluster.ProcessOptions{Options: cluster.Options{Infra: inf},
		Binary: os.Args[0], Env: []string{childEnv + "=real"}, Stderr: logs})
	if err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	defer c.Close()
	// About 9,200 bids a partition at 3,000 a second: 3 s of run.
	ddl := strings.Replace(nexmark.PartitionedDDL(parts), "bid-*.csv' FORMAT CSV;", "bid-*.csv' FORMAT CSV RATE 3000 PER SECOND;", 1)
	out := &textRows{}
	done := make(chan error, 1)
	go func() {
		done <- c.RunScript(ctx, filepath.Join(parts, "q7.sql"), ddl+q.Text, cluster.ScriptOptions{BaseDir: parts, Replay: true,
			MaxDelay: time.Second, NewOutput: func() (sinks.Writer, error) { return out, nil }})
	}()
	clustertest.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		var seen []string
		for _, q := range c.Coordinator.Queries() {
			if q.State == deploy.StateRunning && q.Committed > 0 && q.ResultRows >= 3 {
				return nil
			}
			seen = append(seen, fmt.Sprintf("%s committed %d rows %d", q.State, q.Committed, q.ResultRows))
		}
		select {
		case err := <-done:
			t.Fatalf("the run ended before the kill (%v): %d rows\n%s", err, len(out.sorted()), logs.String())
		default:
		}
		return fmt.Errorf("the query has not committed results yet: %v", seen)
	})
	if err := c.Kill("w-2"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v\n%s", err, logs.String())
		}
	case <-ctx.Done():
		t.Fatalf("run did not end\n%s", logs.String())
	}
	recovered := false
	for _, q := range c.Coordinator.Queries() {
		recovered = recovered || q.Generation > 0
	}
	if !recovered {
		t.Fatalf("the query ended without a recovery (killed too late?)")
	}
	if got := out.sorted(); !slices.Equal(got, want) {
		t.Fatalf("after a kill: %d rows, locally %d\nlogs:\n%s", len(got), len(want), logs.String())
	}
}
