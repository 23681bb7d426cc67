package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
	"github.com/tierflow/tierflow/runtime/ortlib"
)

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the tierflow version and the components it was built with",
		Example: "  tierflow version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(a.out, "tierflow %s (%s, %s/%s; ONNX Runtime %s expected)\n",
				programVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH, ortlib.Version)
			return nil
		},
	}
}
