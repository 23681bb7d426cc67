package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/security"
)

// TestNATSSetupSecureCluster walks the secure setup of docs/operations.md: nats-setup,
// a coordinator serving the generated config on its embedded server,
// a worker and clients on their creds over TLS. The owner's query runs; a
// client without credentials, or with a worker's, is refused.
func TestNATSSetupSecureCluster(t *testing.T) {
	dir := t.TempDir()
	sec := filepath.Join(dir, "secrets")
	code, out, errs := runCLI(t, "", "nats-setup", "--out", sec, "--client", "alice", "--data", "sensors.>", "--client", "bob", "--admin", "ops",
		"--worker", "e1", "--listen", "127.0.0.1:-1", "--tls-host", "127.0.0.1")
	if code != exitOK || !strings.Contains(out, "alice.creds") {
		t.Fatalf("nats-setup: exit %d\n%s\n%s", code, out, errs)
	}
	if code, _, errs := runCLI(t, "", "nats-setup", "--out", sec); code != exitBadInput {
		t.Fatalf("a second nats-setup into the same directory: exit %d %s", code, errs)
	}
	ca, creds := filepath.Join(sec, "ca.pem"), func(u string) string { return filepath.Join(sec, u+".creds") }
	data := filepath.Join(dir, "data")
	os.Mkdir(data, 0o755)
	clustertest.WriteData(t, data, 2000)
	// The coordinator of a secured cluster reads the query's files (to
	// plan it) only under a data root of its own.
	coordOut := startTierflow(t, "coordinator", "--nats-config", filepath.Join(sec, "server.conf"), "--nats-creds", creds("coordinator"),
		"--tls-ca", ca, "--authority", filepath.Join(sec, "authority.json"), "--data-root", data, "--heartbeat", "200ms", "--placement", "rules")
	var url string
	clustertest.CheckFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		for _, line := range strings.Split(coordOut.String(), "\n") {
			if rest, ok := strings.CutPrefix(line, "coordinator on "); ok {
				url = strings.TrimSpace(rest)
				return nil
			}
		}
		return fmt.Errorf("coordinator not up:\n%s", coordOut.String())
	})
	// e1's creds name it: no --name needed.
	startTierflow(t, "worker", "--nats", url, "--nats-creds", creds("e1"), "--tls-ca", ca, "--tier", "edge", "--data-root", data)

	show := filepath.Join(dir, "show.sql")
	os.WriteFile(show, []byte("SHOW WORKERS;\n"), 0o644)
	clustertest.CheckFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		code, out, errs := runCLI(t, "", "submit", "--nats", url, "--nats-creds", creds("alice"), "--tls-ca", ca, show)
		if code != exitOK || !strings.Contains(out, "e1") {
			return fmt.Errorf("SHOW WORKERS: exit %d %s %s", code, out, errs)
		}
		return nil
	})
	code, out, errs = runCLI(t, "", "submit", "--nats", url, "--nats-creds", creds("alice"), "--tls-ca", ca, "--format", "csv", filepath.Join(data, "query.sql"))
	if code != exitOK || !strings.Contains(out, "north") {
		t.Fatalf("alice's query: exit %d\n%s\n%s", code, out, errs)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no credentials", []string{"--tls-ca", ca}},
		{"a worker's", []string{"--nats-creds", creds("e1"), "--tls-ca", ca}},
	} {
		args := append(append([]string{"submit", "--nats", url}, tc.args...), filepath.Join(data, "query.sql"))
		code, out, errs := runCLI(t, "", args...)
		if code == exitOK || strings.Contains(out, "north") {
			t.Errorf("submit with %s: exit %d, out %q: want refused", tc.name, code, out)
		}
		if !strings.Contains(strings.ToLower(errs), "authorization") && !strings.Contains(errs, "denied") {
			t.Errorf("submit with %s: %q, want an authorization error", tc.name, errs)
		}
	}
}

// TestNATSSetupUsersAndRevoke: --data grants the --client named before it
// (and is refused before any), and revoke takes one user out.
func TestNATSSetupUsersAndRevoke(t *testing.T) {
	sec := filepath.Join(t.TempDir(), "secrets")
	if code, _, errs := runCLI(t, "", "nats-setup", "--out", sec, "--data", "sensors.>", "--client", "alice"); code != exitBadInput || !strings.Contains(errs, "--client NAME --data") {
		t.Fatalf("--data before any --client: exit %d %s", code, errs)
	}
	code, out, errs := runCLI(t, "", "nats-setup", "--out", sec, "--client", "alice", "--data", "sensors.>", "--data", "alerts.out", "--client", "bob", "--expires", "720h")
	if code != exitOK {
		t.Fatalf("nats-setup: exit %d %s %s", code, out, errs)
	}
	au, err := security.LoadAuthority(filepath.Join(sec, "authority.json"))
	if err != nil {
		t.Fatal(err)
	}
	if a := au.Access("alice"); len(a.Data) != 2 || a.Data[0] != "sensors.>" || a.Data[1] != "alerts.out" {
		t.Errorf("alice's data %v", a.Data)
	}
	if a := au.Access("bob"); len(a.Data) != 0 {
		t.Errorf("bob's data %v, want none", a.Data)
	}
	code, out, errs = runCLI(t, "", "nats-setup", "revoke", "--out", sec, "bob")
	if code != exitOK || !strings.Contains(out, "revoked bob") {
		t.Fatalf("revoke bob: exit %d %s %s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(sec, "bob.creds")); err == nil {
		t.Error("bob.creds is still there")
	}
	if code, _, errs := runCLI(t, "", "nats-setup", "revoke", "--out", sec, "bob"); code != exitBadInput || !strings.Contains(errs, "already") {
		t.Errorf("revoke bob again: exit %d %s", code, errs)
	}
}
