package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/relay/relaybench"
)

// newBenchRelayPeerCmd is the receiving end of `bench relay` across
// processes: the bench starts it as a child with the server's URL and a
// control subject, drives it over NATS, and closes its stdin to end it.
// Hidden: nobody runs it by hand.
func newBenchRelayPeerCmd(a *app) *cobra.Command {
	var control string
	c := &cobra.Command{
		Use:    "relay-peer",
		Short:  "Receiving end of bench relay across processes (started by bench relay)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.g.nats == "" || control == "" {
				return badInput(fmt.Errorf("relay-peer needs --nats and --control (bench relay starts it)"))
			}
			opts, err := a.natsAuth().Options(a.g.nats)
			if err != nil {
				return badInput(err)
			}
			return relaybench.ServePeer(cmd.Context(), a.g.nats, control, a.in, opts...)
		},
	}
	c.Flags().StringVar(&control, "control", "", "control subject prefix the bench drives the peer on")
	return c
}
