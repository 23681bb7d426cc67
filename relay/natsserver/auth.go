package natsserver

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// ErrAuth: connection credentials that cannot be used (a missing or
// malformed creds, nkey or TLS file, or two ways of saying who one is).
var ErrAuth = errors.New("nats: bad credentials")

// Anonymous is the identity of a connection that gives no credentials.
const Anonymous = "anonymous"

// Auth is how a process proves who it is to NATS, as NATS users know it:
// a creds file (user JWT and nkey seed), an nkey seed file, or a user and
// password (also from the URL's user:pass@), and TLS (a CA to trust the
// server by, and a client certificate for servers that verify clients).
// Every tierflow command that connects builds its nats.Options here.
type Auth struct {
	Creds          string // file with a user JWT and its nkey seed (nsc, tierflow nats-setup)
	NKey           string // file with an nkey user seed
	User, Password string
	TLSCA          string // CA certificate(s) the server's certificate must chain to
	TLSCert        string // client certificate
	TLSKey         string // its private key
}

// Options are the nats.Options that present a's credentials when
// connecting to url. With an identity other than anonymous, request
// replies come to an inbox of that identity's own (_INBOX_<identity>.),
// so that server permissions can keep one user from reading another's
// replies.
func (a Auth) Options(rawURL string) ([]nats.Option, error) {
	var opts []nats.Option
	n := 0
	if a.Creds != "" {
		n++
		if _, err := os.Stat(a.Creds); err != nil {
			return nil, fmt.Errorf("%w: --nats-creds: %w", ErrAuth, err)
		}
		opts = append(opts, nats.UserCredentials(a.Creds))
	}
	if a.NKey != "" {
		n++
		o, err := nats.NkeyOptionFromSeed(a.NKey)
		if err != nil {
			return nil, fmt.Errorf("%w: --nats-nkey %s: %w", ErrAuth, a.NKey, err)
		}
		opts = append(opts, o)
	}
	if a.User != "" || a.Password != "" {
		n++
		opts = append(opts, nats.UserInfo(a.User, a.Password))
	}
	if n > 1 {
		return nil, fmt.Errorf("%w: give one of --nats-creds, --nats-nkey and --nats-user/--nats-password", ErrAuth)
	}
	if a.TLSCA != "" {
		if _, err := os.Stat(a.TLSCA); err != nil {
			return nil, fmt.Errorf("%w: --tls-ca: %w", ErrAuth, err)
		}
		opts = append(opts, nats.RootCAs(a.TLSCA))
	}
	if (a.TLSCert == "") != (a.TLSKey == "") {
		return nil, fmt.Errorf("%w: --tls-cert and --tls-key go together", ErrAuth)
	}
	if a.TLSCert != "" {
		for _, f := range []string{a.TLSCert, a.TLSKey} {
			if _, err := os.Stat(f); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrAuth, err)
			}
		}
		opts = append(opts, nats.ClientCert(a.TLSCert, a.TLSKey))
	}
	id, err := a.Identity(rawURL)
	if err != nil {
		return nil, err
	}
	if id != Anonymous {
		opts = append(opts, nats.CustomInboxPrefix(InboxPrefix(id)))
	}
	// Refusals name the user they refused.
	opts = append(opts, nats.ErrorHandler(errorHandler(id)))
	return opts, nil
}

// InboxPrefix is the inbox prefix of identity id: its request replies
// arrive on InboxPrefix(id) + ".<random>".
func InboxPrefix(id string) string { return "_INBOX_" + id }

// Identity is the name a's connection is known by on tierflow's control
// subjects: the user name (given, or from the URL), the name in a creds
// file's JWT (its public key when it has none), an nkey's public key, or
// Anonymous. The server's permissions decide whether the connection may use
// it: a client may publish only on its own identity's control subjects.
func (a Auth) Identity(rawURL string) (string, error) {
	switch {
	case a.Creds != "":
		b, err := os.ReadFile(a.Creds)
		if err != nil {
			return "", fmt.Errorf("%w: --nats-creds: %w", ErrAuth, err)
		}
		tok, err := jwt.ParseDecoratedJWT(b)
		if err != nil {
			return "", fmt.Errorf("%w: --nats-creds %s: %w", ErrAuth, a.Creds, err)
		}
		uc, err := jwt.DecodeUserClaims(tok)
		if err != nil {
			return "", fmt.Errorf("%w: --nats-creds %s: %w", ErrAuth, a.Creds, err)
		}
		if token(uc.Name) {
			return uc.Name, nil
		}
		return uc.Subject, nil
	case a.NKey != "":
		b, err := os.ReadFile(a.NKey)
		if err != nil {
			return "", fmt.Errorf("%w: --nats-nkey: %w", ErrAuth, err)
		}
		kp, err := nkeys.ParseDecoratedNKey(b)
		if err != nil {
			return "", fmt.Errorf("%w: --nats-nkey %s: %w", ErrAuth, a.NKey, err)
		}
		return kp.PublicKey()
	case a.User != "":
		if !token(a.User) {
			return "", fmt.Errorf("%w: user name %q: want letters, digits, '-' or '_'", ErrAuth, a.User)
		}
		return a.User, nil
	}
	for _, u := range strings.Split(rawURL, ",") {
		if pu, err := url.Parse(strings.TrimSpace(u)); err == nil && pu.User != nil && pu.User.Username() != "" {
			if !token(pu.User.Username()) {
				return "", fmt.Errorf("%w: user name in the NATS URL: want letters, digits, '-' or '_'", ErrAuth)
			}
			return pu.User.Username(), nil
		}
	}
	return Anonymous, nil
}

var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// token reports whether s can be one subject token of a control subject.
func token(s string) bool { return tokenRE.MatchString(s) }
