package operators

import (
	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/bench"
)

func Command(benv *bench.Env) *cobra.Command {
	cfg := DefaultConfig()
	c := &cobra.Command{
		Use:   "operators",
		Short: "Rows/s of filter, project, hash aggregate, hash join and a TUMBLE pipeline vs the bare kernel",
		Long: `operators measures the relational operators on generated numeric batches
(id BIGINT, k BIGINT, v DOUBLE, ts TIMESTAMP) next to the bare arrow compute
kernel or plain Go loop doing the same work, in the same run. overhead is the
baseline's rows/s over the engine's: 1.0 means no engine overhead. Kernels run
on one goroutine; the pipeline runs as a dataflow with GOMAXPROCS=1, so every
number is per core.`,
		Example: "  tierflow bench operators\n  tierflow bench operators --rows 8388608 --format json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rows, err := Run(cfg)
			if err != nil {
				return err
			}
			return benv.PrintRows(rows)
		},
	}
	fl := c.Flags()
	fl.Int64Var(&cfg.Rows, "rows", cfg.Rows, "rows per measurement")
	fl.IntVar(&cfg.Batch, "batch", cfg.Batch, "rows per record batch")
	fl.Int64Var(&cfg.Keys, "keys", cfg.Keys, "distinct group and join keys")
	fl.IntVar(&cfg.Repeats, "repeats", cfg.Repeats, "best of this many measurements")
	return c
}
