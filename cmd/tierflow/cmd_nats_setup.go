package main

import (
	"errors"
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/runtime/security"
)

func newNATSSetupCmd(a *app) *cobra.Command {
	var o security.SetupOptions
	var out string
	c := &cobra.Command{
		Use:   "nats-setup --out DIR",
		Short: "Generate a secure NATS setup for a cluster: operator, accounts, users per role, creds files, server config, TLS",
		Long: `nats-setup writes into --out (created, owner-only) everything a secure tierflow
cluster needs, in one step:

  server.conf        nats-server configuration (tierflow coordinator --nats-config, or nats-server -c)
  operator.jwt       the operator the server trusts; accounts are preloaded in server.conf
  coordinator.creds  the coordinator: reads control requests, deploys, stops
  worker.creds       workers: register, heartbeat, run deployed parts, move data (any name)
  NAME.creds         one per --worker: the same, as worker NAME only (cannot pose as another)
  NAME.creds         one per --client: submit, stop and read the results of its own queries only
  ca.pem, server-*.pem   with --tls-host: a CA and the server's certificate (clients: --tls-ca ca.pem)

Each role's subject permissions are in its creds file's JWT, signed by the
cluster's account: a worker cannot submit or stop queries, a client cannot
register a worker or read another client's results, and anyone without
credentials is refused. --admin names clients that may stop any query (pass
the same names to the coordinator's --admin). Keep the directory private: the
creds files are secrets.`,
		Example: `  tierflow nats-setup --out secrets --client alice --client bob --admin ops --tls-host nats.example.com --jetstream
  tierflow coordinator --nats-config secrets/server.conf --nats-creds secrets/coordinator.creds --tls-ca secrets/ca.pem --admin ops`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return badInput(errors.New("--out DIR is required"))
			}
			s, err := security.Generate(out, o)
			if err != nil {
				return badInput(err)
			}
			fmt.Fprintf(a.out, "server config   %s (multi-server: include accounts.conf, see docs/deploy)\n", s.ServerConf)
			fmt.Fprintf(a.out, "account         TIERFLOW %s\n", s.Account)
			names := make([]string, 0, len(s.Creds))
			for n := range s.Creds {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				fmt.Fprintf(a.out, "%-15s %s\n", n, s.Creds[n])
			}
			if s.CA != "" {
				fmt.Fprintf(a.out, "TLS CA          %s (clients: --tls-ca)\n", s.CA)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&out, "out", "", "directory to write the setup into (must not hold one)")
	f.StringArrayVar(&o.Workers, "worker", nil, "a worker with creds of its own, NAME.creds, usable only as tierflow worker --name NAME (repeatable; worker.creds serves any name)")
	f.StringArrayVar(&o.Clients, "client", nil, "a client user (repeatable; default: one named client)")
	f.StringArrayVar(&o.Admins, "admin", nil, "a client user that may stop any query (repeatable)")
	f.StringArrayVar(&o.WorkerData, "worker-data", nil, "data subjects workers may use, e.g. sensors.> (repeatable; default: any but tierflow's control subjects; name them to use --worker)")
	f.StringArrayVar(&o.ClientData, "client-data", nil, "data subjects clients may publish and read, e.g. sensors.> (repeatable; default none)")
	f.StringVar(&o.Listen, "listen", "", "the server's client address (default 0.0.0.0:4222)")
	f.StringArrayVar(&o.TLSHosts, "tls-host", nil, "make a CA and a server certificate for this host name or address and require TLS (repeatable)")
	f.BoolVar(&o.JetStream, "jetstream", false, "enable JetStream (stored under --out/jetstream)")
	return c
}
