package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tierflow/tierflow/runtime/security"
)

func newNATSSetupCmd(a *app) *cobra.Command {
	var o security.SetupOptions
	var out string
	users := &userFlags{o: &o}
	c := &cobra.Command{
		Use:   "nats-setup --out DIR",
		Short: "Generate a secure NATS setup for a cluster: operator, accounts, users per role, creds files, server config, TLS",
		Long: `nats-setup writes into --out (created, owner-only) everything a secure tierflow
cluster needs, in one step:

  server.conf        nats-server configuration (tierflow coordinator --nats-config, or nats-server -c)
  accounts.conf      the operator and accounts every server includes (nats-setup revoke rewrites it)
  operator.jwt       the operator the server trusts; accounts are preloaded in server.conf
  authority.json     the coordinator's --authority: each client's data subjects and admin role, and
                     the key it signs each query's own data user with
  coordinator.creds  the coordinator: reads control requests, deploys, stops
  NAME.creds         one per --worker: register, heartbeat, run deployed parts, move data between
                     workers, as worker NAME only (default: one worker, "worker")
  NAME.creds         one per --client: submit, stop and read the results of its own queries only,
                     publish and read its --data subjects
  leaf.creds         a hub or edge server's leaf-node link (refused as a client connection)
  keys/              the keys that sign (operator, account signing key), kept for nats-setup revoke
  ca.pem, server-*.pem   with --tls-host: a CA and the server's certificate (clients: --tls-ca ca.pem)

Each role's subject permissions are in its creds file's JWT, signed by the
cluster's account: a worker cannot submit or stop queries, a client cannot
register a worker or read another client's results, and anyone without
credentials is refused. A query's streams and sinks act with its owner's
authority, not the worker's: the coordinator (given --authority) mints each
part a NATS user with exactly the owner's --data subjects. --admin names
clients that may stop any query. Keep the directory private: the creds
files and keys are secrets.

  tierflow nats-setup revoke --out DIR NAME   revokes one user (see its --help)`,
		Example: `  tierflow nats-setup --out secrets --client alice --data 'sensors.>' --client bob --admin ops --worker edge-1 --tls-host nats.example.com
  tierflow coordinator --nats-config secrets/server.conf --nats-creds secrets/coordinator.creds --tls-ca secrets/ca.pem --authority secrets/authority.json`,
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
			fmt.Fprintf(a.out, "authority       %s (tierflow coordinator --authority)\n", s.Authority)
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
	f.StringArrayVar(&o.Workers, "worker", nil, "a worker and its creds, NAME.creds, usable only as tierflow worker --name NAME (repeatable; default: one worker named worker)")
	f.BoolVar(&o.SharedWorker, "shared-worker", false, "also write worker.creds for any worker name (weaker: one machine's creds can pose as another worker)")
	f.Var(users.clients(), "client", "a client user (repeatable; default: one named client)")
	f.Var(users.admins(), "admin", "a client user that may stop any query (repeatable)")
	f.Var(users.data(), "data", "data subjects the --client or --admin named just before may publish and read, and its queries use, e.g. 'sensors.>' (repeatable)")
	f.StringArrayVar(&o.WorkerData, "worker-data", nil, "data subjects the workers' own creds may use (repeatable; default none: queries use their owner's, minted by the coordinator)")
	f.StringArrayVar(&o.ClientData, "client-data", nil, "data subjects every client may publish and read, e.g. sensors.> (repeatable; default none)")
	f.DurationVar(&o.Expires, "expires", 0, "the clients' creds expire after this long, e.g. 720h (default: never; the coordinator's, workers' and leaf's never do)")
	f.StringVar(&o.Listen, "listen", "", "the server's client address (default 0.0.0.0:4222)")
	f.StringArrayVar(&o.TLSHosts, "tls-host", nil, "make a CA and a server certificate for this host name or address and require TLS (repeatable)")
	f.BoolVar(&o.JetStream, "jetstream", false, "enable JetStream (stored under --out/jetstream)")
	c.AddCommand(newNATSRevokeCmd(a))
	return c
}

// userFlags are --client, --admin and --data, whose order matters: --data
// grants the client named just before it.
type userFlags struct {
	o    *security.SetupOptions
	last string
}

type userFlag struct {
	u   *userFlags
	set func(string) error
	typ string
	val *[]string
}

func (f userFlag) String() string {
	if f.val == nil {
		return ""
	}
	return strings.Join(*f.val, ",")
}
func (f userFlag) Set(v string) error { return f.set(v) }
func (f userFlag) Type() string       { return f.typ }

func (u *userFlags) clients() pflag.Value {
	return userFlag{u: u, typ: "NAME", val: &u.o.Clients, set: func(v string) error {
		u.o.Clients, u.last = append(u.o.Clients, v), v
		return nil
	}}
}

func (u *userFlags) admins() pflag.Value {
	return userFlag{u: u, typ: "NAME", val: &u.o.Admins, set: func(v string) error {
		u.o.Admins, u.last = append(u.o.Admins, v), v
		return nil
	}}
}

func (u *userFlags) data() pflag.Value {
	return userFlag{u: u, typ: "SUBJECT", set: func(v string) error {
		if u.last == "" {
			return fmt.Errorf("--data %s: name its --client (or --admin) first: --client NAME --data %s", v, v)
		}
		if u.o.Data == nil {
			u.o.Data = map[string][]string{}
		}
		u.o.Data[u.last] = append(u.o.Data[u.last], v)
		return nil
	}}
}

func newNATSRevokeCmd(a *app) *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "revoke --out DIR NAME",
		Short: "Revoke one user of a setup (a client, a worker, the leaf) without regenerating the rest",
		Long: `revoke lists NAME's public key as revoked in the cluster's account (re-signed
with the operator key nats-setup kept under DIR/keys), takes NAME out of
authority.json and renames NAME.creds to NAME.creds.revoked. The servers apply
it when they reload their configuration: nats-server --signal reload, or
SIGHUP to a tierflow coordinator serving --nats-config (which also re-reads
--authority and stops the revoked user's queries). Copy the new accounts.conf
to every server of a multi-server cluster first.`,
		Example: `  tierflow nats-setup revoke --out secrets bob`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return badInput(errors.New("--out DIR is required (the directory nats-setup wrote)"))
			}
			r, err := security.Revoke(out, args[0])
			if err != nil {
				return badInput(err)
			}
			fmt.Fprintf(a.out, "revoked %s (%s) in %s\n", r.User, r.PublicKey, r.Accounts)
			fmt.Fprintf(a.out, "reload every server: nats-server --signal reload, or kill -HUP the coordinator serving --nats-config\n")
			return nil
		},
	}
	c.Flags().StringVar(&out, "out", "", "the directory nats-setup wrote")
	return c
}
