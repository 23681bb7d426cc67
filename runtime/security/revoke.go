package security

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// Revoked is what Revoke did.
type Revoked struct {
	User, PublicKey string
	// Accounts is the rewritten accounts.conf: every server that includes
	// it must reload (nats-server --signal reload, or SIGHUP to a
	// coordinator serving it) for the revocation to take effect.
	Accounts string
}

// Revoke revokes one user of the setup in dir (a client, a worker, the
// leaf) without regenerating the rest: the account's JWT, re-signed with
// the operator key kept under dir/keys, lists the user's public key as
// revoked from now on (the server refuses, and disconnects, whoever
// presents a JWT of that key issued until now); the user leaves the
// authority file (the coordinator refuses its submissions and stops its
// queries when it reloads it) and its creds file is renamed <name>.creds.revoked.
func Revoke(dir, name string) (*Revoked, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if name == userCoordinator {
		return nil, fmt.Errorf("%w: the coordinator cannot be revoked alone: generate a new setup", ErrSetup)
	}
	credsPath := filepath.Join(dir, name+".creds")
	b, err := os.ReadFile(credsPath)
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(credsPath + ".revoked"); err == nil {
			return nil, fmt.Errorf("%w: %s is revoked already", ErrSetup, name)
		}
		return nil, fmt.Errorf("%w: no user %s in %s (no %s.creds)", ErrSetup, name, dir, name)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	tok, err := jwt.ParseDecoratedJWT(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: not a creds file", ErrSetup, credsPath)
	}
	uc, err := jwt.DecodeUserClaims(tok)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: not a creds file", ErrSetup, credsPath)
	}
	seed, err := os.ReadFile(filepath.Join(dir, keysDir, operatorSeed))
	if err != nil {
		return nil, fmt.Errorf("%w: the operator key (keys/%s) is not there: a setup written before keys were kept must be regenerated: %w", ErrSetup, operatorSeed, err)
	}
	okp, err := nkeys.FromSeed(seed)
	if err != nil {
		return nil, fmt.Errorf("%w: keys/%s: not an nkey seed", ErrSetup, operatorSeed)
	}
	accPath := filepath.Join(dir, keysDir, accountJWT)
	old, err := os.ReadFile(accPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	ac, err := jwt.DecodeAccountClaims(strings.TrimSpace(string(old)))
	if err != nil {
		return nil, fmt.Errorf("%w: keys/%s: %w", ErrSetup, accountJWT, err)
	}
	if uc.IssuerAccount != ac.Subject && uc.Issuer != ac.Subject {
		return nil, fmt.Errorf("%w: %s was not issued by this setup's account", ErrSetup, credsPath)
	}
	ac.Revoke(uc.Subject)
	nu, err := ac.Encode(okp)
	if err != nil {
		return nil, fmt.Errorf("%w: re-sign the account: %w", ErrSetup, err)
	}
	confPath := filepath.Join(dir, accountsConf)
	conf, err := os.ReadFile(confPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	oldTok := strings.TrimSpace(string(old))
	if !strings.Contains(string(conf), oldTok) {
		return nil, fmt.Errorf("%w: %s does not hold the account keys/%s names (edited by hand?)", ErrSetup, confPath, accountJWT)
	}
	tmp := confPath + ".new"
	if err := os.WriteFile(tmp, []byte(strings.Replace(string(conf), oldTok, nu, 1)), 0o600); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	if err := os.WriteFile(accPath, []byte(nu), 0o600); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	if err := os.Rename(tmp, confPath); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	authPath := filepath.Join(dir, authorityFile)
	if a, err := LoadAuthority(authPath); err == nil {
		if _, ok := a.Users[name]; ok {
			delete(a.Users, name)
			if err := a.Save(authPath); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrSetup, err)
			}
		}
	}
	if err := os.Rename(credsPath, credsPath+".revoked"); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	return &Revoked{User: name, PublicKey: uc.Subject, Accounts: confPath}, nil
}
