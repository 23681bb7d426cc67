package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/modelzoo"
)

// TestModelCallCannotGrowAWorker: on a cluster as deployed (the NATS
// server, the coordinator and the worker each a process), ONNX Runtime's
// memory in the worker stays within --max-model-memory. A model call whose
// batch asks for more than it has free (a CNN of 2,048 filters on 28x28
// images: 5.3 MiB of intermediate tensors a row, 169 MiB a batch of 32) is
// split until its halves fit, so the query still answers every row while
// the worker's resident memory grows by less than one such batch; a model
// whose weights do not fit beside the open sessions' is refused, its query
// failing for the limit, naming the flag; and the worker stays up for a
// query whose model fits.
func TestModelCallCannotGrowAWorker(t *testing.T) {
	const bound = 64 << 20
	data, err := filepath.Abs("../../examples/fashion/data/shelf.arrow")
	if err != nil {
		t.Fatal(err)
	}
	logreg, err := filepath.Abs("../../examples/fashion/models/logreg.onnx")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cnn := func(name string, filters int) string {
		f := filepath.Join(dir, name+".onnx")
		if err := modelzoo.NewCNN(28, filters, 3, []int{10}, strings.Fields("a b c d e f g h i j"), 3).Graph(name).WriteFile(f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	wide, wider := cnn("wide", 2048), cnn("wider", 4096) // 14 and 28 MB of weights
	script := func(name, model string) string {
		src := `CREATE MODEL classify TASK 'image-classification'
  INPUTS (image TENSOR(FLOAT, 1, 28, 28))
  OUTPUTS (label VARCHAR, score FLOAT)
  VARIANTS (only FROM '` + model + `');
CREATE STREAM shelf (id BIGINT, ts TIMESTAMP, image TENSOR(FLOAT, 1, 28, 28), true_label VARCHAR, true_group VARCHAR)
  FROM FILE '` + data + `' FORMAT ARROW;
SELECT id, c.label FROM shelf CROSS JOIN LATERAL classify(image) AS c(label, score);
`
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}

	_, url := startNATSChild(t)
	startChild(t, "real", nil, "coordinator", "--nats", url, "--heartbeat", "1s", "--placement", "rules")
	w := startChild(t, "real", nil, "worker", "--nats", url, "--tier", "edge", "--name", "w1",
		"--max-memory", "512MiB", "--max-model-memory", fmt.Sprint(bound)+"B", "--threads", "1")
	nc, err := natsserver.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	client := coordinator.NewClient(nc)
	clustertest.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		ws, err := client.Workers(context.Background())
		if err != nil {
			return err
		}
		if len(ws) != 1 {
			return fmt.Errorf("%d workers registered", len(ws))
		}
		return nil
	})
	submit := func(f string) (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		m := exec.CommandContext(ctx, os.Args[0], "submit", "--nats", url, "--format", "csv", "--output", os.DevNull, f)
		m.Env = append(os.Environ(), childEnv+"=real")
		out, _ := m.CombinedOutput()
		return m.ProcessState.ExitCode(), string(out)
	}

	before := currentRSS(t, w.cmd.Process.Pid)
	resetPeakRSS(w.cmd.Process.Pid)
	code, out := submit(script("wide.sql", wide))
	grew := peakRSS(w.cmd.Process.Pid) - before
	t.Logf("the wide model's query: exit %d, the worker grew %d MiB at its peak\n%s", code, grew>>20, out)
	if code != exitOK || !strings.Contains(out, "2000 rows") {
		t.Errorf("the wide model's query: exit %d, want 0 with its 2000 rows, batches split to fit the bound\nworker:\n%s", code, w.out.String())
	}
	if batch := int64(169 << 20); grew >= batch {
		t.Errorf("the worker grew %d MiB running the wide model, as much as one unbounded batch (%d MiB)", grew>>20, batch>>20)
	}
	code, out = submit(script("wider.sql", wider))
	t.Logf("the wider model's query: exit %d\n%s", code, out)
	if code != exitFailure || !strings.Contains(out, "--max-model-memory") || !strings.Contains(out, "wider.onnx") || !strings.Contains(out, "weights") {
		t.Errorf("the wider model's query: exit %d, want 1, its model refused for its weights naming --max-model-memory", code)
	}
	select {
	case err := <-w.done:
		t.Fatalf("the worker left: %v\n%s", err, w.out.String())
	default:
	}
	if code, out := submit(script("logreg.sql", logreg)); code != exitOK {
		t.Errorf("a query whose model fits, after the refusal: exit %d\n%s", code, out)
	}
}

// currentRSS is process pid's resident memory now (/proc/PID/status VmRSS).
func currentRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb); err == nil {
				return kb << 10
			}
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}
