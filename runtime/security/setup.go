package security

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/tierflow/tierflow/runtime/deploy"
)

// ErrSetup: a secure setup could not be generated.
var ErrSetup = errors.New("nats-setup")

// SetupOptions say what Setup generates.
type SetupOptions struct {
	// Workers are workers with creds of their own, each bound to its name
	// (tierflow worker --name); the shared worker.creds serves any name.
	Workers []string
	// Clients are the client users (default: one named "client"); Admins
	// are clients that may stop anyone's query (the coordinator's --admin).
	Clients, Admins []string
	// WorkerData are the data subjects workers may use (default ">": any
	// but tierflow's control subjects); ClientData those clients may
	// publish and read (default none).
	WorkerData, ClientData []string
	// Listen is the server's client address (default 0.0.0.0:4222: a
	// cluster on a network, which the credentials and TLS protect).
	Listen string
	// TLSHosts, when set, makes a CA and a server certificate for these
	// host names and addresses, and the server config requires TLS.
	TLSHosts []string
	// JetStream enables JetStream, stored under the output directory.
	JetStream bool
}

// Setup is what Setup wrote.
type Setup struct {
	Dir        string
	ServerConf string            // nats-server config file
	Creds      map[string]string // creds file by user name
	CA         string            // CA certificate clients trust ("" without TLS)
	Account    string            // public key of the TIERFLOW account (leaf remotes bind it)
	Admins     []string
}

// Users of the cluster's account, by role.
const (
	userCoordinator = RoleCoordinator
	userWorker      = RoleWorker
	// userLeaf is what a hub or edge server connects to the cluster as
	// (leafnodes.remotes credentials): the link carries everyone's
	// subjects, each end's own users still bound by their permissions.
	userLeaf = "leaf"
)

// Generate writes into dir (created, 0700) a secure NATS setup for a
// tierflow cluster: an operator, a system account and a tierflow account
// (JetStream enabled), one user per role with its permissions (coordinator,
// worker, and each client) and a creds file for each (0600), TLS
// certificates when asked for, and server.conf, a nats-server configuration
// that trusts the operator and preloads the accounts (no account server
// needed). Existing files are not overwritten: a second run is refused.
func Generate(dir string, o SetupOptions) (*Setup, error) {
	if len(o.Clients) == 0 {
		o.Clients = []string{RoleClient}
	}
	for _, a := range o.Admins {
		if !slices.Contains(o.Clients, a) {
			o.Clients = append(o.Clients, a)
		}
	}
	if len(o.WorkerData) == 0 {
		if len(o.Workers) > 0 {
			return nil, fmt.Errorf("%w: workers with creds of their own need their data subjects named (--worker-data sensors.> ...): \">\" would let one pose as another", ErrSetup)
		}
		o.WorkerData = []string{">"}
	}
	if len(o.Workers) > 0 {
		if err := CheckDataSubjects(o.WorkerData); err != nil {
			return nil, fmt.Errorf("%w: --worker-data: %w", ErrSetup, err)
		}
	}
	if o.Listen == "" {
		o.Listen = "0.0.0.0:4222"
	}
	seen := map[string]bool{userCoordinator: true, userWorker: true, userLeaf: true}
	for _, c := range o.Clients {
		if seen[c] {
			return nil, fmt.Errorf("%w: client %q: the name is taken (coordinator and worker are roles)", ErrSetup, c)
		}
		seen[c] = true
	}
	if err := CheckDataSubjects(o.ClientData); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "server.conf")); err == nil {
		return nil, fmt.Errorf("%w: %s already holds a setup (server.conf); remove it or pick another --out", ErrSetup, dir)
	}
	s := &Setup{Dir: dir, ServerConf: filepath.Join(dir, "server.conf"), Creds: map[string]string{}, Admins: o.Admins}

	okp, opub, err := keyPair(nkeys.CreateOperator)
	if err != nil {
		return nil, err
	}
	oc := jwt.NewOperatorClaims(opub)
	oc.Name = "tierflow"
	ojwt, err := oc.Encode(okp)
	if err != nil {
		return nil, fmt.Errorf("%w: operator: %w", ErrSetup, err)
	}
	account := func(name string, js bool) (nkeys.KeyPair, string, string, error) {
		akp, apub, err := keyPair(nkeys.CreateAccount)
		if err != nil {
			return nil, "", "", err
		}
		ac := jwt.NewAccountClaims(apub)
		ac.Name = name
		if js {
			ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: jwt.NoLimit, DiskStorage: jwt.NoLimit, Streams: jwt.NoLimit, Consumer: jwt.NoLimit}
		}
		t, err := ac.Encode(okp)
		if err != nil {
			return nil, "", "", fmt.Errorf("%w: account %s: %w", ErrSetup, name, err)
		}
		return akp, apub, t, nil
	}
	_, syspub, sysjwt, err := account("SYS", false)
	if err != nil {
		return nil, err
	}
	akp, apub, ajwt, err := account("TIERFLOW", o.JetStream)
	if err != nil {
		return nil, err
	}
	s.Account = apub

	users := []struct {
		name string
		p    Perms
	}{{userCoordinator, Coordinator(o.WorkerData)}, {userWorker, Worker("", userWorker, o.WorkerData)}, {userLeaf, Leaf()}}
	for _, w := range o.Workers {
		if err := deploy.ValidName("worker", w); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSetup, err)
		}
		if seen[w] {
			return nil, fmt.Errorf("%w: worker %q: the name is taken", ErrSetup, w)
		}
		seen[w] = true
		users = append(users, struct {
			name string
			p    Perms
		}{w, Worker(w, w, o.WorkerData)})
	}
	for _, c := range o.Clients {
		p, err := Client(c, o.ClientData)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSetup, err)
		}
		users = append(users, struct {
			name string
			p    Perms
		}{c, p})
	}
	for _, u := range users {
		ukp, upub, err := keyPair(nkeys.CreateUser)
		if err != nil {
			return nil, err
		}
		uc := jwt.NewUserClaims(upub)
		uc.Name = u.name
		uc.Pub.Allow.Add(u.p.PubAllow...)
		uc.Pub.Deny.Add(u.p.PubDeny...)
		uc.Sub.Allow.Add(u.p.SubAllow...)
		uc.Sub.Deny.Add(u.p.SubDeny...)
		if u.p.Respond {
			uc.Resp = &jwt.ResponsePermission{MaxMsgs: 1, Expires: time.Minute}
		}
		ujwt, err := uc.Encode(akp)
		if err != nil {
			return nil, fmt.Errorf("%w: user %s: %w", ErrSetup, u.name, err)
		}
		seed, err := ukp.Seed()
		if err != nil {
			return nil, err
		}
		creds, err := jwt.FormatUserConfig(ujwt, seed)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, u.name+".creds")
		if err := os.WriteFile(path, creds, 0o600); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSetup, err)
		}
		s.Creds[u.name] = path
	}

	opPath := filepath.Join(dir, "operator.jwt")
	if err := os.WriteFile(opPath, []byte(ojwt), 0o600); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	// accounts.conf is what every server of a multi-server cluster shares
	// (docs/deploy includes it); server.conf is a one-server cluster.
	var acc strings.Builder
	fmt.Fprintf(&acc, "# Trust of a tierflow cluster, written by tierflow nats-setup: the operator, and the\n")
	fmt.Fprintf(&acc, "# accounts preloaded (no account server). Users and their permissions are in the\n")
	fmt.Fprintf(&acc, "# creds files' JWTs, signed by the TIERFLOW account. Every server includes this file.\n")
	fmt.Fprintf(&acc, "operator: %q\n", opPath)
	fmt.Fprintf(&acc, "system_account: %s\n", syspub)
	fmt.Fprintf(&acc, "resolver: MEMORY\nresolver_preload: {\n  %s: %q\n  %s: %q\n}\n", syspub, sysjwt, apub, ajwt)
	if err := os.WriteFile(filepath.Join(dir, "accounts.conf"), []byte(acc.String()), 0o600); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	var conf strings.Builder
	fmt.Fprintf(&conf, "# nats-server configuration of a one-server tierflow cluster, written by tierflow nats-setup.\n")
	fmt.Fprintf(&conf, "listen: %q\n", o.Listen)
	fmt.Fprintf(&conf, "max_payload: %d\n", 8<<20)
	fmt.Fprintf(&conf, "include \"accounts.conf\"\n")
	if o.JetStream {
		fmt.Fprintf(&conf, "jetstream {\n  store_dir: %q\n}\n", filepath.Join(dir, "jetstream"))
	}
	if len(o.TLSHosts) > 0 {
		// Loopback too: processes on the server's own machine (the
		// coordinator on its embedded server) connect there.
		hosts := slices.Clone(o.TLSHosts)
		for _, h := range []string{"localhost", "127.0.0.1"} {
			if !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
		ca, cert, key, err := writeTLS(dir, hosts)
		if err != nil {
			return nil, err
		}
		s.CA = ca
		fmt.Fprintf(&conf, "tls {\n  cert_file: %q\n  key_file: %q\n  ca_file: %q\n  timeout: 2\n}\n", cert, key, ca)
	}
	if err := os.WriteFile(s.ServerConf, []byte(conf.String()), 0o600); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	return s, nil
}

func keyPair(create func() (nkeys.KeyPair, error)) (nkeys.KeyPair, string, error) {
	kp, err := create()
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrSetup, err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrSetup, err)
	}
	return kp, pub, nil
}

// writeTLS makes a CA (ca.pem) and a server certificate for hosts signed by
// it (server-cert.pem, server-key.pem), ECDSA P-256, valid for two years.
func writeTLS(dir string, hosts []string) (ca, cert, key string, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", "", err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "tierflow CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(2, 0, 0), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return "", "", "", err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", "", err
	}
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: hosts[0]},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(2, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return "", "", "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		return "", "", "", err
	}
	ca, cert, key = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "server-cert.pem"), filepath.Join(dir, "server-key.pem")
	for _, f := range []struct {
		path, kind string
		der        []byte
		mode       os.FileMode
	}{{ca, "CERTIFICATE", caDER, 0o644}, {cert, "CERTIFICATE", der, 0o644}, {key, "EC PRIVATE KEY", keyDER, 0o600}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der}), f.mode); err != nil {
			return "", "", "", fmt.Errorf("%w: %w", ErrSetup, err)
		}
	}
	return ca, cert, key, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}
