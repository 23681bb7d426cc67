package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/runtime/dataaware"
	"github.com/tierflow/tierflow/runtime/inference"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// profileFlags are the options of `tierflow profile`.
type profileFlags struct {
	models     []string
	batches    string
	data       string
	truth      map[string]string
	keep       []string
	iters      int
	warmup     int
	atBatch    int
	workerType string
	device     string
	threads    string
	write      bool
	out        string
}

// profileRow is one line of the summary table.
type profileRow struct {
	Model    string  `json:"model"`
	Variant  string  `json:"variant"`
	Threads  int     `json:"threads"`
	Batch    int     `json:"batch"`
	P50ms    string  `json:"p50_ms"`
	P75ms    string  `json:"p75_ms"`
	P90ms    string  `json:"p90_ms"`
	PerSec   float64 `json:"items_per_s"`
	OutputKB string  `json:"output_kb"`
	Accuracy string  `json:"accuracy"`
	Provider string  `json:"provider"`
}

// comboRow is one line of the accuracy profile table.
type comboRow struct {
	Variants string `json:"variants"`
	Rows     int    `json:"rows"`
	Accuracy string `json:"accuracy"`
}

func newProfileCmd(a *app) *cobra.Command {
	f := profileFlags{truth: map[string]string{}}
	c := &cobra.Command{
		Use:   "profile [flags]",
		Short: "Measure the catalog's model variants on this machine and write the profiles into the catalog",
		Long: `profile runs every variant of the catalog's models (--model picks some) through
the ML operator's path (Arrow record -> ONNX Runtime -> label/score columns) on
the rows of a labelled validation set (--data, an Arrow IPC file with the
models' input columns and true labels) and measures, per variant:

  - latency per batch at each --batch size (P50/P75/P90 over --iterations
    calls after --warmup) and the throughput it gives (batch / P50);
  - the output size per row (what crosses a link);
  - the accuracy of its labels against the truth column (--truth MODEL=COL,
    default true_label), in percent, and its recall on every true class with
    the class's support (classes: in the catalog; EXPLAIN prints them, and a
    DATA AWARE accuracy target weighs them by the live class mix).

A model with several inputs (VQA(image, question)) is fed one column per
input, in the model's input order, named as the catalog's inputs: declares
them. Without --data every input is made up (random values of the shape the
catalog declares, TENSOR(FLOAT, d...), else the model's own): latency and
output size are measured, accuracy is not.

For a model whose catalog entry has an end_to_end table (a workflow of
upstream models ending in it), it measures the workflow's accuracy for every
combination of upstream variants: a row reaches the model when each upstream
model's label is in its --keep set (MODEL=LABEL[|LABEL...]; none: all rows),
and the model's labels are scored on those rows. These become the end_to_end
rows and the variants' accuracy profile rows (JellyBean 4.1).

With --write the catalog file is rewritten (comments are not kept), with
--out FILE the updated catalog goes there; either way the measured latency at
--at-batch becomes latency_ms.<--worker-type> per item, and the latency of a
whole call at every --batch size (by default 1 to 64, powers of two) becomes
latency_ms.<--worker-type>.by_batch, from which a query WITH (LATENCY <= x)
picks its batch size.`,
		Example: `  tierflow profile --catalog examples/fashion/catalog.yaml --data examples/fashion/data/shelf.arrow \
      --truth garment=true_group --keep garment=tops --batch 1,8,32 --out /tmp/profiled.yaml
  tierflow profile --catalog examples/fashion/catalog.yaml --data examples/fashion/data/shelf.arrow \
      --model classify --batch 1,2,4,8,16,32,64 --format json
  tierflow profile --catalog examples/vqa-live/catalog.yaml --model VQA --batch 1,8,32`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runProfile(a, f)
		},
	}
	fl := c.Flags()
	fl.StringSliceVar(&f.models, "model", nil, "profile only these models (default: all of the catalog's models)")
	fl.StringVar(&f.batches, "batch", "1,2,4,8,16,32,64", "batch sizes, comma-separated (each becomes latency_ms.<type>.by_batch)")
	fl.StringVar(&f.data, "data", "", "labelled validation set: an Arrow IPC file with the models' input columns and true labels (none: random inputs of the declared shapes, no accuracy)")
	fl.StringToStringVar(&f.truth, "truth", nil, "true-label column per model, MODEL=COLUMN (default true_label)")
	fl.StringSliceVar(&f.keep, "keep", nil, "labels of an upstream model that pass on to the next model, MODEL=LABEL[|LABEL...]")
	fl.IntVar(&f.iters, "iterations", 50, "timed calls per variant and batch size")
	fl.IntVar(&f.warmup, "warmup", 5, "untimed calls before the timed ones")
	fl.IntVar(&f.atBatch, "at-batch", 8, "the batch size whose per-item latency goes into the catalog (must be in --batch; else the largest)")
	fl.StringVar(&f.workerType, "worker-type", fmt.Sprintf("x%d", runtime.NumCPU()), "worker type the measured latency is recorded for")
	fl.StringVar(&f.device, "device", "cpu", "where sessions run: cpu, cuda or auto")
	fl.StringVar(&f.threads, "threads", "1", "intra-op threads per session, comma-separated: each count is profiled (the first becomes latency_ms.<type>, the others latency_ms.<type>.by_threads; 0: ONNX Runtime's default, every core)")
	fl.BoolVar(&f.write, "write", false, "rewrite the --catalog file with the measured profiles")
	fl.StringVar(&f.out, "out", "", "write the updated catalog to this file")
	return c
}

func runProfile(a *app, f profileFlags) error {
	if a.g.catalog == "" {
		return badInput(fmt.Errorf("profile needs --catalog FILE"))
	}
	if f.iters < 1 || f.warmup < 0 {
		return badInput(fmt.Errorf("--iterations must be at least 1 and --warmup at least 0"))
	}
	batches, err := cli.ParseBatches(f.batches)
	if err != nil {
		return badInput(err)
	}
	threads, err := parseThreads(f.threads)
	if err != nil {
		return badInput(err)
	}
	var dev onnx.Device
	switch f.device {
	case "cpu":
		dev = onnx.CPU
	case "cuda":
		dev = onnx.CUDA
	case "auto":
		dev = onnx.Auto
	default:
		return badInput(fmt.Errorf("unknown --device %q: want cpu, cuda or auto", f.device))
	}
	keep := map[string][]string{}
	for _, k := range f.keep {
		m, labels, ok := strings.Cut(k, "=")
		if !ok || m == "" || labels == "" {
			return badInput(fmt.Errorf("--keep %q: want MODEL=LABEL[|LABEL...]", k))
		}
		keep[m] = strings.Split(labels, "|")
	}
	cat, err := catalog.LoadFile(a.g.catalog)
	if err != nil {
		return badInput(err)
	}
	var models []*catalog.Model
	for _, name := range f.models {
		m := cat.Model(name)
		if m == nil {
			return badInput(noSuchModel("--model", name, cat, a.g.catalog))
		}
		models = append(models, m)
	}
	if len(models) == 0 {
		models = cat.Models
	}
	// A downstream model needs its upstream models measured too, when there
	// is a validation set to score the workflow on; its end_to_end table
	// must then end in it (checked before anything is measured). Without
	// one, the table is left as it is (the prototype's, say).
	need := map[string]bool{}
	for _, m := range models {
		need[m.Name] = true
		if m.EndToEnd != nil && f.data != "" {
			if chain := m.EndToEnd.Models; len(chain) == 0 || chain[len(chain)-1] != m.Name {
				return badInput(fmt.Errorf("model %s: end_to_end models %v must end in %s to be measured on --data", m.Name, chain, m.Name))
			}
			for _, u := range m.EndToEnd.Models {
				need[u] = true
			}
		}
	}
	for name := range keep {
		if cat.Model(name) == nil {
			return badInput(noSuchModel("--keep", name, cat, a.g.catalog))
		}
	}
	var run []*catalog.Model
	for _, m := range cat.Models {
		if need[m.Name] {
			run = append(run, m)
		}
	}

	env, err := onnx.Open(a.g.ortLib)
	if err != nil {
		return err
	}
	mem := memory.NewGoAllocator()
	// Without --data the inputs are made up from their declared shapes:
	// latency and output size, no accuracy.
	var data *inference.Data
	if f.data != "" {
		if data, err = inference.LoadData(f.data, mem); err != nil {
			return badInput(err)
		}
		defer data.Release()
	}
	truthOf := func(col string) ([]string, error) {
		if data == nil {
			return nil, fmt.Errorf("no --data: accuracy needs a labelled validation set")
		}
		return data.Strings(col)
	}
	// A profiler per thread count: each has its own sessions.
	profilers := make([]*inference.Profiler, len(threads))
	for i, t := range threads {
		profilers[i] = &inference.Profiler{Env: env, Options: onnx.Options{Device: dev, IntraOpThreads: t}, Mem: mem, Data: data,
			BaseDir: filepath.Dir(a.g.catalog), Iterations: f.iters, Warmup: f.warmup}
	}

	total := 0
	for _, m := range run {
		total += len(m.Variants) * len(batches) * f.iters * len(threads)
	}
	prog := cli.NewProgress(a.err, int64(total), "profiling")
	measured := map[string][]*inference.VariantProfile{}
	var rows []profileRow
	at := f.atBatch
	if !slices.Contains(batches, at) {
		at = slices.Max(batches)
	}
	for _, m := range run {
		col := f.truth[m.Name]
		if col == "" {
			col = "true_label"
		}
		truth, terr := truthOf(col)
		for _, v := range m.Variants {
			var lat catalog.Latency
			for ti, t := range threads {
				prog.Describe(fmt.Sprintf("profiling %s/%s, %s", m.Name, v.Name, threadsName(t)))
				vp, err := profilers[ti].Variant(m, v, batches, func() { prog.Add(1) })
				if err != nil {
					prog.Done()
					if isProfileInputErr(err) {
						return badInput(err)
					}
					return err
				}
				acc := "-"
				if ti == 0 {
					// Accuracy and sizes do not depend on the threads.
					measured[m.Name] = append(measured[m.Name], vp)
					if vp.Predicted != nil && terr == nil {
						x, _ := inference.Accuracy(vp.Predicted, truth, nil)
						v.Accuracy = float64(int64(x*100+0.5)) / 100
						// Per-class recall: what a data-aware plan weighs by the
						// live stream's class mix (SneakPeek).
						v.Classes = dataaware.ClassRecalls(vp.Predicted, truth)
					}
					v.OutputKB = float64(int64(vp.OutputKB*1000+0.5)) / 1000
				}
				if vp.Predicted != nil && terr == nil {
					acc = fmt.Sprintf("%.2f", v.Accuracy)
				}
				l := catalog.Latency{Threads: recordedThreads(t), ByBatch: map[int]catalog.Latency{}}
				for _, x := range vp.Latency {
					l.ByBatch[x.Batch] = catalog.Latency{P50: round6(x.P50.Seconds() * 1000), P75: round6(x.P75.Seconds() * 1000), P90: round6(x.P90.Seconds() * 1000)}
					if x.Batch == at {
						pl := x.PerItemMS()
						l.P50, l.P75, l.P90 = round6(pl.P50), round6(pl.P75), round6(pl.P90)
					}
					rows = append(rows, profileRow{Model: m.Name, Variant: v.Name, Threads: l.Threads, Batch: x.Batch,
						P50ms: ms(x.P50.Seconds()), P75ms: ms(x.P75.Seconds()), P90ms: ms(x.P90.Seconds()),
						PerSec: float64(int64(x.ItemsPerSecond)), OutputKB: fmt.Sprintf("%.3f", vp.OutputKB), Accuracy: acc, Provider: vp.Provider})
				}
				// Every measured batch size is kept: a latency SLO picks the
				// batch size from them (catalog.Latency.PickBatch); the
				// first thread count is the profile, the others by_threads
				// (catalog.Latency.ForThreads).
				if ti == 0 {
					lat = l
					continue
				}
				if lat.ByThreads == nil {
					lat.ByThreads = map[int]catalog.Latency{}
				}
				lat.ByThreads[l.Threads] = l
			}
			if len(threads) == 1 && threads[0] == 1 && len(lat.ByThreads) == 0 {
				// One thread, as the catalogs always were: no need to say.
				lat.Threads = 0
			}
			if v.Latency == nil {
				v.Latency = map[string]catalog.Latency{}
			}
			v.Latency[f.workerType] = lat
		}
	}
	prog.Done()

	var combos []comboRow
	for _, m := range run {
		if m.EndToEnd == nil || f.data == "" || !need[m.Name] || !slices.ContainsFunc(models, func(x *catalog.Model) bool { return x == m }) {
			continue
		}
		chain := m.EndToEnd.Models
		col := f.truth[m.Name]
		if col == "" {
			col = "true_label"
		}
		truth, err := truthOf(col)
		if err != nil {
			return badInput(fmt.Errorf("model %s: the accuracy of its end_to_end workflow: %w", m.Name, err))
		}
		cs, err := inference.Combinations(chain, measured, keep, truth)
		if err != nil {
			return badInput(err)
		}
		if err := inference.ApplyCombinations(cat, chain, cs); err != nil {
			return badInput(err)
		}
		for _, c := range cs {
			combos = append(combos, comboRow{Variants: strings.Join(c.Variants, " -> "), Rows: c.Rows, Accuracy: fmt.Sprintf("%.2f", c.Accuracy)})
		}
	}

	if err := cli.PrintRows(a.out, a.g.format, rows); err != nil {
		return err
	}
	if len(combos) > 0 {
		if a.g.format == "" || a.g.format == "table" {
			fmt.Fprintln(a.out, "\nWorkflow accuracy by variants (end_to_end):")
		}
		if err := cli.PrintRows(a.out, a.g.format, combos); err != nil {
			return err
		}
	}
	dst := f.out
	if f.write {
		dst = a.g.catalog
	}
	if dst != "" {
		b, err := cat.Marshal()
		if err != nil {
			return err
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(a.err, "-- wrote %s (latency_ms.%s at batch %d)\n", dst, f.workerType, at)
	}
	return nil
}

// parseThreads reads --threads: thread counts, 0 for ONNX Runtime's
// default, each once.
func parseThreads(s string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 || n > 1024 {
			return nil, fmt.Errorf("--threads %q: %q is not a thread count (0..1024)", s, p)
		}
		if seen[recordedThreads(n)] {
			return nil, fmt.Errorf("--threads %q: %d threads twice", s, recordedThreads(n))
		}
		seen[recordedThreads(n)] = true
		out = append(out, n)
	}
	return out, nil
}

// recordedThreads is the thread count a profile records: ONNX Runtime's
// default (0) uses every core.
func recordedThreads(t int) int {
	if t == 0 {
		return runtime.NumCPU()
	}
	return t
}

func threadsName(t int) string {
	if t == 0 {
		return "ONNX Runtime's threads"
	}
	return cli.Count(t, "thread")
}

func isProfileInputErr(err error) bool {
	return errors.Is(err, inference.ErrProfile) || errors.Is(err, inference.ErrModel)
}

func ms(s float64) string { return fmt.Sprintf("%.4f", s*1000) }

func round6(x float64) float64 { return float64(int64(x*1e6+0.5)) / 1e6 }

// noSuchModel names the models the catalog has, and the one meant when
// name is a likely typo of it.
func noSuchModel(flag, name string, cat *catalog.Catalog, file string) error {
	var names []string
	for _, m := range cat.Models {
		names = append(names, m.Name)
	}
	msg := fmt.Sprintf("%s %s: no such model in %s", flag, name, file)
	if s := cat.Suggest(name); s != "" && cat.Model(s) != nil {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return fmt.Errorf("%s; its models: %s", msg, strings.Join(names, ", "))
}
