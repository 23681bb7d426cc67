package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/runtime/inference"
)

// runExampleScript runs an example's checked-in script the way `tierflow
// run` does, its models on a runtime of cfg, and returns each query's rows
// (decoded JSON lines) and the runtime's model choices. cat, when set, is
// the catalog beside the script's own CREATEs.
func runExampleScript(t *testing.T, script string, cat *catalog.Catalog, cfg inference.Config) ([][]map[string]any, []inference.Choice) {
	t.Helper()
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rt := inference.New(cfg)
	var outs []*bytes.Buffer
	err = exec.RunScript(context.Background(), script, string(src), exec.ScriptOptions{
		Options: exec.Options{Allocator: mem, BaseDir: filepath.Dir(script), Lateral: rt.Lateral, BatchSize: 256},
		Catalog: cat,
		NewOutput: func() (sinks.Writer, error) {
			outs = append(outs, &bytes.Buffer{})
			return sinks.New("json", outs[len(outs)-1])
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	res := make([][]map[string]any, len(outs))
	for i, b := range outs {
		dec := json.NewDecoder(b)
		for dec.More() {
			var row map[string]any
			if err := dec.Decode(&row); err != nil {
				t.Fatal(err)
			}
			res[i] = append(res[i], row)
		}
	}
	return res, rt.Choices()
}

// readIPCRecords reads every record of an Arrow IPC file (an example's
// stream file), each retained for the caller to release.
func readIPCRecords(t testing.TB, path string) []arrow.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f, ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []arrow.Record
	for i := range r.NumRecords() {
		rec, err := r.Record(i)
		if err != nil {
			t.Fatal(err)
		}
		rec.Retain()
		out = append(out, rec)
	}
	return out
}
