package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"

	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/security"
)

// Environment variables a password may come from instead of the command
// line, where other users of the machine can read it (ps).
const (
	envNATSUser     = "TIERFLOW_NATS_USER"
	envNATSPassword = "TIERFLOW_NATS_PASSWORD"
)

// addNATSFlags registers the connection flags every command that talks to
// NATS understands, as NATS users know them. No flag has a secret as its
// default: --help prints defaults.
func addNATSFlags(pf *pflag.FlagSet, g *globals) {
	pf.StringVar(&g.auth.Creds, "nats-creds", "", "NATS credentials file (user JWT and nkey seed; tierflow nats-setup writes them)")
	pf.StringVar(&g.auth.NKey, "nats-nkey", "", "NATS nkey seed file")
	pf.StringVar(&g.auth.User, "nats-user", "", "NATS user (default: $"+envNATSUser+", or the --nats URL's user:pass@)")
	pf.StringVar(&g.auth.Password, "nats-password", "", "NATS password (default: $"+envNATSPassword+"; prefer the variable: flags show in ps)")
	pf.StringVar(&g.auth.TLSCA, "tls-ca", "", "CA certificate the NATS server's TLS certificate must chain to")
	pf.StringVar(&g.auth.TLSCert, "tls-cert", "", "client TLS certificate, for servers that verify clients")
	pf.StringVar(&g.auth.TLSKey, "tls-key", "", "private key of --tls-cert")
	pf.StringVar(&g.natsConfig, "nats-config", "", "nats-server configuration file for the embedded server (authorization, TLS, JetStream; tierflow nats-setup writes one)")
}

// natsAuth is the credentials the flags and the environment give.
func (a *app) natsAuth() natsserver.Auth {
	au := a.g.auth
	if au.User == "" && au.Creds == "" && au.NKey == "" {
		au.User = os.Getenv(envNATSUser)
	}
	if au.Password == "" && au.Creds == "" && au.NKey == "" {
		au.Password = os.Getenv(envNATSPassword)
	}
	return au
}

// secured reports whether the command runs on a secured cluster: with
// credentials, a server configuration (nats-setup's) or an authority file.
func (a *app) secured(authority string) bool {
	au := a.natsAuth()
	// A user:password@ in --nats counts as well: no host name holds an @.
	return au.Creds != "" || au.NKey != "" || au.User != "" || a.g.natsConfig != "" || authority != "" || strings.Contains(a.g.nats, "@")
}

// connectNATS connects to url with the command's credentials. It is the one
// place commands open a NATS connection; errors name the URL redacted.
func (a *app) connectNATS(url, name string, extra ...nats.Option) (*nats.Conn, error) {
	opts, err := a.natsAuth().Options(url)
	if err != nil {
		return nil, badInput(err)
	}
	opts = append(append(opts, nats.Name(name)), extra...)
	return natsserver.Connect(url, opts...)
}

// natsIdentity is the name this command's connection acts as on the
// control subjects (natsserver.Auth.Identity).
func (a *app) natsIdentity(url string) (string, error) {
	id, err := a.natsAuth().Identity(url)
	if err != nil {
		return "", badInput(err)
	}
	return id, nil
}

// startEmbeddedNATS starts the in-process server of a command run without
// --nats: from --nats-config when given, else on loopback at a random port
// with JetStream in dir (when dir is not empty).
func (a *app) startEmbeddedNATS(dir string) (*natsserver.Server, error) {
	o := natsserver.Options{ConfigFile: a.g.natsConfig}
	if dir != "" {
		o.JetStream, o.StoreDir = true, dir
	}
	srv, err := natsserver.Start(o)
	if err != nil && a.g.natsConfig != "" {
		return nil, badInput(fmt.Errorf("--nats-config: %w", err))
	}
	return srv, err
}

// redact is natsserver.Redact: credentials never print.
func redact(s string) string { return natsserver.Redact(s) }

// secretFiles are the files, by flag, this process authenticates with: no
// data root may hold them (security.Roots.RefuseSecrets). Certificates are
// public and left out.
func (a *app) secretFiles(authority string) map[string]string {
	au := a.natsAuth()
	return map[string]string{"--nats-creds": au.Creds, "--nats-nkey": au.NKey, "--tls-key": au.TLSKey, "--nats-config": a.g.natsConfig, "--authority": authority}
}

// dataRoots are the directories a coordinator or worker serves a query's
// files from (--data-root), one rule for both: none may hold the process's
// secrets, and on a secured cluster no --data-root means no files at all,
// since its users do not share the process's files (without it a query
// could read the process's creds and hand them to its submitter).
func (a *app) dataRoots(dirs []string, authority string) (*security.Roots, error) {
	roots, err := security.NewRoots(dirs)
	if err != nil {
		return nil, badInput(err)
	}
	if err := roots.RefuseSecrets(a.secretFiles(authority)); err != nil {
		return nil, badInput(err)
	}
	if roots == nil && a.secured(authority) {
		roots = security.NoFiles()
	}
	return roots, nil
}
