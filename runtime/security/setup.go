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
	// (tierflow worker --name, which defaults to it): one creds file per
	// worker. Without any, one worker named "worker" gets worker.creds.
	Workers []string
	// SharedWorker also writes worker.creds as the shared worker role,
	// which serves any worker name (one machine's creds can then pose as
	// any worker: a cluster that needs it opts in).
	SharedWorker bool
	// Clients are the client users (default: one named "client"); Admins
	// are clients that may stop anyone's query (the coordinator's --admin).
	Clients, Admins []string
	// WorkerData are data subjects the workers' own creds may use (default
	// none, or ">" for the shared worker: a query's streams and sinks use
	// a connection of their own, minted by the coordinator with the
	// owner's data subjects); ClientData those every client may publish
	// and read, and which its queries may use (default none). Data adds,
	// by client, subjects that client alone is granted (--client NAME
	// --data 'sensors.>').
	WorkerData, ClientData []string
	Data                   map[string][]string
	// Expires, when set, is how long the clients' creds are valid.
	// The infrastructure's (coordinator, workers, leaf) do not expire: a
	// client's are what gets handed around.
	Expires time.Duration
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
	// Authority is the coordinator's authority file (--authority): every
	// client's data subjects and admin role, and the signing key it mints
	// each query's data user with.
	Authority string
}

// Users of the cluster's account, by role.
const (
	userCoordinator = RoleCoordinator
	userWorker      = RoleWorker
	// userLeaf is what a hub or edge server connects to the cluster as
	// (leafnodes.remotes credentials): the link carries everyone's
	// subjects, each end's own users still bound by their permissions.
	// Its JWT allows leaf-node connections only.
	userLeaf = "leaf"
)

// Files of a setup directory that Revoke and the coordinator read back.
const (
	keysDir       = "keys"
	operatorSeed  = "operator.nk" // signs the account JWT (a revocation re-signs it)
	accountJWT    = "account.jwt" // the TIERFLOW account as last signed
	userSignerKey = "users.nk"    // account signing key of the role and client users
	accountsConf  = "accounts.conf"
	authorityFile = "authority.json"
)

type setupUser struct {
	name    string
	p       Perms
	leaf    bool
	expires time.Duration
}

// Generate writes into dir (created, 0700) a secure NATS setup for a
// tierflow cluster: an operator, a system account and a tierflow account
// (JetStream enabled), one user per role with its permissions (coordinator,
// each worker, and each client) and a creds file for each (0600), TLS
// certificates when asked for, and server.conf, a nats-server configuration
// that trusts the operator and preloads the accounts (no account server
// needed). The keys that sign (the operator's, the account's signing keys)
// are kept under dir/keys (0600), so that one user can be revoked later
// without regenerating the rest (Revoke), and authority.json gives the
// coordinator the clients' data grants and the key it mints each query's
// data user with. Existing files are not overwritten: a second run is
// refused.
func Generate(dir string, o SetupOptions) (*Setup, error) {
	if len(o.Clients) == 0 {
		o.Clients = []string{RoleClient}
	}
	for _, a := range o.Admins {
		if !slices.Contains(o.Clients, a) {
			o.Clients = append(o.Clients, a)
		}
	}
	for c := range o.Data {
		if !slices.Contains(o.Clients, c) {
			return nil, fmt.Errorf("%w: --data for %q, which is not a --client or --admin", ErrSetup, c)
		}
	}
	if err := CheckDataSubjects(o.WorkerData); err != nil && !(o.SharedWorker && len(o.Workers) == 0) {
		return nil, fmt.Errorf("%w: --worker-data: %w", ErrSetup, err)
	}
	sharedData := o.WorkerData
	if len(sharedData) == 0 {
		sharedData = []string{">"}
	}
	if len(o.Workers) == 0 && !o.SharedWorker {
		// One creds file per worker by default: the single worker of a
		// setup that names none is called "worker".
		o.Workers = []string{userWorker}
	}
	if o.Listen == "" {
		o.Listen = "0.0.0.0:4222"
	}
	seen := map[string]bool{userCoordinator: true, userLeaf: true}
	if o.SharedWorker {
		seen[userWorker] = true
	}
	for _, c := range o.Clients {
		if seen[c] || c == userWorker {
			return nil, fmt.Errorf("%w: client %q: the name is taken (coordinator, worker and leaf are roles)", ErrSetup, c)
		}
		seen[c] = true
	}
	if err := CheckDataSubjects(o.ClientData); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	for c, d := range o.Data {
		if err := CheckDataSubjects(d); err != nil {
			return nil, fmt.Errorf("%w: --data of %s: %w", ErrSetup, c, err)
		}
	}
	if o.Expires < 0 {
		return nil, fmt.Errorf("%w: --expires %s: want a positive duration", ErrSetup, o.Expires)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, keysDir), 0o700); err != nil {
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
	// The users are signed by signing keys of the account, never by its
	// identity key: the role and client users by one (kept in keys/), each
	// query's data user by another (the coordinator's, in authority.json).
	userSigner, userSignerPub, err := keyPair(nkeys.CreateAccount)
	if err != nil {
		return nil, err
	}
	mintSigner, mintSignerPub, err := keyPair(nkeys.CreateAccount)
	if err != nil {
		return nil, err
	}
	account := func(name string, js bool, signers ...string) (string, string, error) {
		akp, apub, err := keyPair(nkeys.CreateAccount)
		if err != nil {
			return "", "", err
		}
		_ = akp // the identity key signs nothing: its signing keys do
		ac := jwt.NewAccountClaims(apub)
		ac.Name = name
		if js {
			ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: jwt.NoLimit, DiskStorage: jwt.NoLimit, Streams: jwt.NoLimit, Consumer: jwt.NoLimit}
		}
		ac.SigningKeys.Add(signers...)
		t, err := ac.Encode(okp)
		if err != nil {
			return "", "", fmt.Errorf("%w: account %s: %w", ErrSetup, name, err)
		}
		return apub, t, nil
	}
	syspub, sysjwt, err := account("SYS", false)
	if err != nil {
		return nil, err
	}
	apub, ajwt, err := account("TIERFLOW", o.JetStream, userSignerPub, mintSignerPub)
	if err != nil {
		return nil, err
	}
	s.Account = apub

	grants := map[string][]string{}
	var allData []string
	for _, c := range o.Clients {
		grants[c] = dedupe(append(slices.Clone(o.ClientData), o.Data[c]...))
		allData = append(allData, grants[c]...)
	}
	allData = append(allData, o.WorkerData...)
	if o.SharedWorker {
		allData = append(allData, sharedData...)
	}
	allData = dedupe(allData)
	users := []setupUser{{name: userCoordinator, p: Coordinator(allData)}, {name: userLeaf, p: Leaf(), leaf: true}}
	if o.SharedWorker {
		users = append(users, setupUser{name: userWorker, p: Worker("", userWorker, sharedData)})
	}
	for _, w := range o.Workers {
		if err := deploy.ValidName("worker", w); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSetup, err)
		}
		if seen[w] {
			return nil, fmt.Errorf("%w: worker %q: the name is taken", ErrSetup, w)
		}
		seen[w] = true
		users = append(users, setupUser{name: w, p: Worker(w, w, o.WorkerData)})
	}
	for _, c := range o.Clients {
		p, err := Client(c, grants[c])
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSetup, err)
		}
		users = append(users, setupUser{name: c, p: p, expires: o.Expires})
	}
	for _, u := range users {
		path, err := writeCreds(dir, u, userSigner, apub)
		if err != nil {
			return nil, err
		}
		s.Creds[u.name] = path
	}

	opPath := filepath.Join(dir, "operator.jwt")
	if err := os.WriteFile(opPath, []byte(ojwt), 0o600); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	for name, kp := range map[string]nkeys.KeyPair{operatorSeed: okp, userSignerKey: userSigner} {
		seed, err := kp.Seed()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSetup, err)
		}
		if err := os.WriteFile(filepath.Join(dir, keysDir, name), seed, 0o600); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSetup, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, keysDir, accountJWT), []byte(ajwt), 0o600); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	if err := writeAccounts(dir, opPath, syspub, sysjwt, apub, ajwt); err != nil {
		return nil, err
	}
	mintSeed, err := mintSigner.Seed()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	auth := &Authority{Account: apub, Signer: string(mintSeed), Users: map[string]Grant{}}
	for _, c := range o.Clients {
		auth.Users[c] = Grant{Data: grants[c], Admin: slices.Contains(o.Admins, c)}
	}
	s.Authority = filepath.Join(dir, authorityFile)
	if err := auth.Save(s.Authority); err != nil {
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

// writeCreds signs u's JWT with signer (a signing key of account) and
// writes dir/<name>.creds (0600).
func writeCreds(dir string, u setupUser, signer nkeys.KeyPair, account string) (string, error) {
	ukp, upub, err := keyPair(nkeys.CreateUser)
	if err != nil {
		return "", err
	}
	uc := jwt.NewUserClaims(upub)
	uc.Name = u.name
	uc.IssuerAccount = account
	uc.Pub.Allow.Add(u.p.PubAllow...)
	uc.Pub.Deny.Add(u.p.PubDeny...)
	uc.Sub.Allow.Add(u.p.SubAllow...)
	uc.Sub.Deny.Add(u.p.SubDeny...)
	if u.p.Respond {
		uc.Resp = &jwt.ResponsePermission{MaxMsgs: 1, Expires: time.Minute}
	}
	if u.leaf {
		// A leaf node's credentials carry every subject: as a client
		// connection they would be a user allowed everything.
		uc.AllowedConnectionTypes.Add(jwt.ConnectionTypeLeafnode)
	}
	if u.expires > 0 {
		uc.Expires = time.Now().Add(u.expires).Unix()
	}
	ujwt, err := uc.Encode(signer)
	if err != nil {
		return "", fmt.Errorf("%w: user %s: %w", ErrSetup, u.name, err)
	}
	seed, err := ukp.Seed()
	if err != nil {
		return "", err
	}
	creds, err := jwt.FormatUserConfig(ujwt, seed)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, u.name+".creds")
	if err := os.WriteFile(path, creds, 0o600); err != nil {
		return "", fmt.Errorf("%w: %w", ErrSetup, err)
	}
	return path, nil
}

// writeAccounts writes accounts.conf: the operator and the accounts,
// preloaded. It is what every server of a multi-server cluster shares
// (docs/deploy includes it); server.conf is a one-server cluster.
func writeAccounts(dir, opPath, syspub, sysjwt, apub, ajwt string) error {
	var acc strings.Builder
	fmt.Fprintf(&acc, "# Trust of a tierflow cluster, written by tierflow nats-setup: the operator, and the\n")
	fmt.Fprintf(&acc, "# accounts preloaded (no account server). Users and their permissions are in the\n")
	fmt.Fprintf(&acc, "# creds files' JWTs, signed by the TIERFLOW account. Every server includes this file;\n")
	fmt.Fprintf(&acc, "# tierflow nats-setup revoke rewrites it (then reload the servers).\n")
	fmt.Fprintf(&acc, "operator: %q\n", opPath)
	fmt.Fprintf(&acc, "system_account: %s\n", syspub)
	fmt.Fprintf(&acc, "resolver: MEMORY\nresolver_preload: {\n  %s: %q\n  %s: %q\n}\n", syspub, sysjwt, apub, ajwt)
	tmp := filepath.Join(dir, accountsConf+".new")
	if err := os.WriteFile(tmp, []byte(acc.String()), 0o600); err != nil {
		return fmt.Errorf("%w: %w", ErrSetup, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, accountsConf)); err != nil {
		return fmt.Errorf("%w: %w", ErrSetup, err)
	}
	return nil
}

func dedupe(s []string) []string {
	var out []string
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
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
