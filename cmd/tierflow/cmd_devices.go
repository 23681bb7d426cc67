package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/runtime/devices"
)

// deviceRow is one line of `tierflow devices`.
type deviceRow struct {
	Device string `json:"device"`
	Name   string `json:"name"`
	Memory string `json:"memory"`
	Used   string `json:"used"`
	Util   string `json:"util"`
}

func newDevicesCmd(a *app) *cobra.Command {
	return newDevicesCmdWith(a, devices.Take)
}

// newDevicesCmdWith takes the inventory function so tests can show a GPU machine.
func newDevicesCmdWith(a *app, take func() devices.Inventory) *cobra.Command {
	return &cobra.Command{
		Use:   "devices",
		Short: "List this machine's compute: CPUs, memory, NVIDIA GPUs (via NVML)",
		Long: `devices prints the inventory a worker reports: CPU count and memory, and each
NVIDIA GPU with its memory and utilisation. Without an NVIDIA driver it says
"no GPU" and why. --format json prints the inventory as JSON.`,
		Example: "  tierflow devices\n  tierflow devices --format json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			inv := take()
			switch a.g.format {
			case "json":
				enc := json.NewEncoder(a.out)
				enc.SetIndent("", "  ")
				return enc.Encode(inv)
			case "", "table":
			default:
				return badInput(fmt.Errorf("unknown --format %q: want table or json", a.g.format))
			}
			rows := []deviceRow{{
				Device: "cpu",
				Name:   cli.Count(inv.CPUs, "core"),
				Memory: bytesHuman(inv.MemoryTotal),
				Used:   "-",
				Util:   "-",
			}}
			for _, g := range inv.GPUs {
				rows = append(rows, deviceRow{
					Device: fmt.Sprintf("gpu %d", g.Index),
					Name:   g.Name,
					Memory: bytesHuman(g.MemoryTotal),
					Used:   bytesHuman(g.MemoryUsed),
					Util:   fmt.Sprintf("%d%% (mem %d%%)", g.UtilGPU, g.UtilMemory),
				})
			}
			if err := cli.PrintRows(a.out, "table", rows); err != nil {
				return err
			}
			if !inv.HasGPU() {
				fmt.Fprintf(a.out, "no GPU: %s\n", inv.NoGPUReason)
			} else if inv.DriverVersion != "" {
				fmt.Fprintf(a.out, "NVIDIA driver %s\n", inv.DriverVersion)
			}
			return nil
		},
	}
}

func bytesHuman(b uint64) string {
	if b == 0 {
		return "?"
	}
	const unit = 1024
	v := float64(b)
	for _, u := range []string{"B", "KiB", "MiB", "GiB"} {
		if v < unit {
			return fmt.Sprintf("%.1f %s", v, u)
		}
		v /= unit
	}
	return fmt.Sprintf("%.1f TiB", v)
}
