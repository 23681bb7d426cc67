package relay

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/internal/cli"
)

// newBenchRelayPeerCmd is the receiving end of `bench relay` across
// processes: the bench starts it as a child with the server's URL and a
// control subject, drives it over NATS, and closes its stdin to end it.
// Hidden: nobody runs it by hand.
func PeerCommand(benv *bench.Env) *cobra.Command {
	var control string
	c := &cobra.Command{
		Use:    "relay-peer",
		Short:  "Receiving end of bench relay across processes (started by bench relay)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if benv.G().NATS == "" || control == "" {
				return cli.BadInput(fmt.Errorf("relay-peer needs --nats and --control (bench relay starts it)"))
			}
			opts, err := benv.G().NATSAuth.Options(benv.G().NATS)
			if err != nil {
				return cli.BadInput(err)
			}
			return ServePeer(cmd.Context(), benv.G().NATS, control, benv.In, opts...)
		},
	}
	c.Flags().StringVar(&control, "control", "", "control subject prefix the bench drives the peer on")
	return c
}
