package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/security"
)

// TestSecretsNeverPrint runs a coordinator and a worker as processes and a
// submit in-process against a server that wants passwords, given in every
// form (in the URL, from the environment, as flags), and a submit with a
// wrong one; no output of any of them holds a password.
func TestSecretsNeverPrint(t *testing.T) {
	secrets := map[string]string{"coord": "pw-coord-S3CRET1", "wk": "pw-worker-S3CRET2", "alice": "pw-alice-S3CRET3"}
	srv, err := natsserver.Start(natsserver.Options{Configure: func(so *server.Options) {
		for u, p := range secrets {
			so.Users = append(so.Users, &server.User{Username: u, Password: p})
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	url := srv.ClientURL()
	hostport := strings.TrimPrefix(url, "nats://")
	dir := t.TempDir()
	clustertest.WriteData(t, dir, 2000)

	coordOut := startTierflow(t, "coordinator", "--nats", "nats://coord:"+secrets["coord"]+"@"+hostport, "--heartbeat", "200ms", "--placement", "rules", "--data-root", dir)
	t.Setenv(envNATSUser, "")
	os.Setenv(envNATSUser, "wk")
	os.Setenv(envNATSPassword, secrets["wk"])
	workerOut := startTierflow(t, "worker", "--nats", url, "--tier", "edge", "--name", "e1", "--data-root", dir)
	os.Unsetenv(envNATSUser)
	os.Unsetenv(envNATSPassword)

	nc, err := srv.Connect(natsUserInfo("alice", secrets["alice"]))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	client := coordinator.NewClient(nc)
	client.User, client.Timeout = "alice", time.Second
	clustertest.CheckFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		ws, err := client.Workers(context.Background())
		if err == nil && len(ws) != 1 {
			err = fmt.Errorf("%d workers", len(ws))
		}
		return err
	})

	var outputs []string
	code, out, errs := runCLI(t, "", "submit", "--nats", url, "--nats-user", "alice", "--nats-password", secrets["alice"], "--format", "csv", filepath.Join(dir, "query.sql"))
	if code != exitOK || !strings.Contains(out, "north") {
		t.Fatalf("submit with --nats-user/--nats-password: exit %d\n%s\n%s", code, out, errs)
	}
	outputs = append(outputs, out, errs)
	shows := filepath.Join(dir, "show.sql")
	os.WriteFile(shows, []byte("SHOW WORKERS;\nSHOW QUERIES;\n"), 0o644)
	code, out, errs = runCLI(t, "", "submit", "--nats", "nats://alice:"+secrets["alice"]+"@"+hostport, shows)
	if code != exitOK || !strings.Contains(out, "alice") {
		t.Fatalf("SHOW with the password in the URL: exit %d (want the owner alice listed)\n%s\n%s", code, out, errs)
	}
	outputs = append(outputs, out, errs)
	// A wrong password: the error names the server, not the password.
	code, out, errs = runCLI(t, "", "submit", "--nats", "nats://alice:"+secrets["alice"]+"x@"+hostport, shows)
	if code == exitOK || !strings.Contains(errs, "REDACTED@") {
		t.Fatalf("wrong password: exit %d, stderr %q: want a failure naming the redacted URL", code, errs)
	}
	outputs = append(outputs, out, errs)
	// Two ways of saying who one is: bad input.
	code, _, errs = runCLI(t, "", "submit", "--nats", url, "--nats-user", "alice", "--nats-creds", shows, shows)
	if code != exitBadInput {
		t.Fatalf("--nats-user with --nats-creds: exit %d %s", code, errs)
	}
	outputs = append(outputs, errs)
	// The processes print where they are; stop them so their logs are complete.
	clustertest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		if !strings.Contains(coordOut.String(), "coordinator on") || !strings.Contains(workerOut.String(), "registered on") {
			return fmt.Errorf("no start lines yet")
		}
		return nil
	})
	outputs = append(outputs, coordOut.String(), workerOut.String())
	all := strings.Join(outputs, "\n")
	for u, p := range secrets {
		if strings.Contains(all, p) {
			t.Errorf("the password of %s shows in the output:\n%s", u, all)
		}
	}
	if !strings.Contains(coordOut.String(), "nats://REDACTED@") {
		t.Errorf("coordinator output does not name its server redacted:\n%s", coordOut.String())
	}
}

func natsUserInfo(u, p string) nats.Option { return nats.UserInfo(u, p) }

// TestDataRootsOneRule: the coordinator and the worker take their data
// roots by one rule. On a secured cluster (creds, an nkey, a user, a
// server configuration, an authority) no --data-root serves no file a
// query names (else a query reads the process's creds and hands them to
// its submitter); an open one keeps tierflow's freedom; and a root that
// holds the process's secrets stops the process at start, exit 2.
func TestDataRootsOneRule(t *testing.T) {
	dir := t.TempDir()
	sec := filepath.Join(dir, "secrets")
	os.MkdirAll(sec, 0o700)
	creds := filepath.Join(sec, "w1.creds")
	os.WriteFile(creds, []byte("-----BEGIN NATS USER JWT-----\n"), 0o600)
	for name, g := range map[string]globals{
		"creds":       {auth: natsserver.Auth{Creds: creds}},
		"a user":      {auth: natsserver.Auth{User: "w1", Password: "pw"}},
		"nats-config": {natsConfig: filepath.Join(sec, "server.conf")},
		"a URL's":     {nats: "nats://w1:pw@127.0.0.1:4222"},
	} {
		a := &app{g: g}
		roots, err := a.dataRoots(nil, "")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := roots.Check(creds); !errors.Is(err, security.ErrNoDataRoot) {
			t.Errorf("%s, no --data-root: %s served (%v), want ErrNoDataRoot", name, creds, err)
		}
	}
	if roots, err := (&app{}).dataRoots(nil, ""); err != nil || roots != nil {
		t.Errorf("an open cluster: %v %v, want no confinement", roots, err)
	}
	if roots, err := (&app{}).dataRoots(nil, filepath.Join(sec, "authority.json")); err != nil || roots == nil {
		t.Errorf("an authority alone: %v %v, want secured", roots, err)
	}
	if code, _, errs := runCLI(t, "", "worker", "--nats", "nats://127.0.0.1:1", "--tier", "edge", "--any-file", "--data-root", dir); code != exitBadInput || !strings.Contains(errs, "choose one") {
		t.Errorf("--any-file with --data-root: exit %d %q, want 2", code, errs)
	}
	for _, cmd := range []string{"worker", "coordinator"} {
		args := []string{cmd, "--nats", "nats://127.0.0.1:1", "--nats-creds", creds, "--data-root", dir}
		if cmd == "worker" {
			args = append(args, "--tier", "edge", "--name", "w1")
		}
		code, _, errs := runCLI(t, "", args...)
		if code != exitBadInput || !strings.Contains(errs, "--data-root "+dir) || !strings.Contains(errs, "--nats-creds") {
			t.Errorf("%s with its creds under its --data-root: exit %d %q, want 2 naming the root and the flag", cmd, code, errs)
		}
	}
}
