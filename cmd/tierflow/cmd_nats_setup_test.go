package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
)

// TestNATSSetupSecureCluster walks the secure setup of docs/operations.md: nats-setup,
// a coordinator serving the generated config on its embedded server,
// a worker and clients on their creds over TLS. The owner's query runs; a
// client without credentials, or with a worker's, is refused.
func TestNATSSetupSecureCluster(t *testing.T) {
	dir := t.TempDir()
	sec := filepath.Join(dir, "secrets")
	code, out, errs := runCLI(t, "", "nats-setup", "--out", sec, "--client", "alice", "--client", "bob", "--admin", "ops",
		"--listen", "127.0.0.1:-1", "--tls-host", "127.0.0.1")
	if code != exitOK || !strings.Contains(out, "alice.creds") {
		t.Fatalf("nats-setup: exit %d\n%s\n%s", code, out, errs)
	}
	if code, _, errs := runCLI(t, "", "nats-setup", "--out", sec); code != exitBadInput {
		t.Fatalf("a second nats-setup into the same directory: exit %d %s", code, errs)
	}
	ca, creds := filepath.Join(sec, "ca.pem"), func(u string) string { return filepath.Join(sec, u+".creds") }
	coordOut := startTierflow(t, "coordinator", "--nats-config", filepath.Join(sec, "server.conf"), "--nats-creds", creds("coordinator"),
		"--tls-ca", ca, "--admin", "ops", "--heartbeat", "200ms", "--placement", "rules")
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
	data := filepath.Join(dir, "data")
	os.Mkdir(data, 0o755)
	clustertest.WriteData(t, data, 2000)
	startTierflow(t, "worker", "--nats", url, "--nats-creds", creds("worker"), "--tls-ca", ca, "--tier", "edge", "--name", "e1", "--data-root", data)

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
		{"a worker's", []string{"--nats-creds", creds("worker"), "--tls-ca", ca}},
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

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "1024": 1024, "512MiB": 512 << 20, "2 GB": 2e9, "10KiB": 10 << 10} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d %v, want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"lots", "-1", "1.5GiB"} {
		if _, err := parseBytes(bad); err == nil {
			t.Errorf("parseBytes(%q) accepted", bad)
		}
	}
}
