package inference

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/runtime/onnx"
)

func Command(benv *bench.Env) *cobra.Command {
	var (
		models   string
		variants string
		batches  string
		iters    int
		threads  int
	)
	c := &cobra.Command{
		Use:   "inference",
		Short: "Per-batch overhead of the ML operator over a bare ONNX Runtime call",
		Long: `inference times, for each model variant and batch size, the ML operator's path
(Arrow record in -> tensor -> session -> Arrow record out, label/score columns) and a
bare onnxruntime_go Run of the same session on the same batch with tensors made in
advance, alternating the two; it prints the P50 of each and overhead = engine/bare - 1.`,
		Example: `  tierflow bench inference
  tierflow bench inference --variants mlp-large --batch 8,64 --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bs, err := cli.ParseBatches(batches)
			if err != nil {
				return cli.BadInput(err)
			}
			names := strings.Split(variants, ",")
			if variants == "" {
				names, err = listModels(models)
				if err != nil {
					return cli.BadInput(err)
				}
			}
			env, err := onnx.Open(benv.G().ORTLib)
			if err != nil {
				return err
			}
			fmt.Fprintf(benv.Err, "ONNX Runtime %s (%s), %d iterations per point, %d intra-op thread(s)\n", env.Version(), env.Library(), iters, threads)
			var rows []OverheadRow
			// Long work reports on stderr as bench planner does: a bar on a
			// terminal, a plain line now and then otherwise.
			prog := benv.Progress(int64(len(names)*len(bs)), "bench inference")
			defer prog.Done()
			for _, v := range names {
				path := filepath.Join(models, strings.TrimSpace(v)+".onnx")
				if _, err := os.Stat(path); err != nil {
					return cli.BadInput(fmt.Errorf("variant %q: %w", v, err))
				}
				r, err := MeasureOverhead(env, OverheadConfig{
					Variant: strings.TrimSpace(v), Model: path, Batches: bs, Iters: iters, Threads: threads,
					Progress: func(msg string) { prog.Describe(msg); prog.Add(1) },
				})
				if err != nil {
					return err
				}
				rows = append(rows, r...)
			}
			prog.Done() // before the table
			return benv.PrintRows(rows)
		},
	}
	f := c.Flags()
	f.StringVar(&models, "models", filepath.Join("examples", "fashion", "models"), "directory of <variant>.onnx files")
	f.StringVar(&variants, "variants", "", "comma-separated variants (default: every .onnx in --models)")
	f.StringVar(&batches, "batch", "1,2,4,8,16,32,64", "comma-separated batch sizes")
	f.IntVar(&iters, "iters", 200, "timed iterations per variant, batch size and path")
	f.IntVar(&threads, "threads", 1, "intra-op threads of the session")
	return c
}

func listModels(dir string) ([]string, error) {
	m, err := filepath.Glob(filepath.Join(dir, "*.onnx"))
	if err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("no .onnx model in %s (pass --models)", dir)
	}
	var names []string
	for _, p := range m {
		names = append(names, strings.TrimSuffix(filepath.Base(p), ".onnx"))
	}
	return names, nil
}
