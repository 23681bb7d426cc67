package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/tierflow/tierflow/relay/natsserver"
)

// The benchmarks' tests live in their packages under bench/ (benchtest runs
// their commands as the CLI does). These need the real CLI: they start
// tierflow child processes (this test binary, childEnv=real); bench
// recovery's are all here.

// TestBenchRecoveryJSON runs a round of the recovery bench for real: worker
// processes (this test binary as the real CLI), one killed -9 mid-run; the
// round recovers with no row lost or duplicated.
//
// The bench runs as a process of its own (realCLI), not in this one with
// childEnv set (t.Setenv rules out t.Parallel): its round waits on a
// 200-rows-a-second stream and a recovery, about 10 s that ran in this
// package's serial part, before every parallel test.
func TestBenchRecoveryJSON(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := realCLI(t, nil, "bench", "recovery", "--rounds", "1", "--rows", "800", "--rate", "200", "--seed", "3", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	out, errb := bytes.NewBufferString(stdout), bytes.NewBufferString(stderr)
	var rows []struct {
		Killed     string  `json:"killed"`
		Rows       int     `json:"rows"`
		Lost       int     `json:"rows_lost"`
		Duplicated int     `json:"rows_duplicated"`
		Recoveries int     `json:"recoveries"`
		P50S       float64 `json:"recovery_p50_s"`
		MaxS       float64 `json:"recovery_max_s"`
	}
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1: %s", len(rows), out.String())
	}
	r := rows[0]
	// 200 s of event time: 20 windows of 4 sites.
	if r.Killed == "" || r.Rows != 80 || r.Lost != 0 || r.Duplicated != 0 || r.Recoveries != 1 || r.P50S <= 0 || r.MaxS < r.P50S {
		t.Fatalf("round %+v: want a killed worker, 80 rows, none lost or duplicated, one recovery", r)
	}
	if !strings.Contains(errb.String(), "round 1 killed") {
		t.Errorf("no progress line: %s", errb.String())
	}
}

// realCLI runs this test binary as the real CLI (childEnv=real, as
// TestMain reads it) in a process of its own, with env added to this
// process's environment, and returns its exit code and output. Unlike run
// with t.Setenv(childEnv, ...), the test may call t.Parallel: the child
// processes the CLI starts inherit childEnv from it, not from this process.
func realCLI(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := osexec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), childEnv+"=real"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *osexec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// TestBenchRecoveryBadFlags: each flag out of range is refused before a
// round starts (exit 2). It lives here, beside the real round above, so that
// bench/recovery needs no test binary of its own (one link of the whole
// engine less in make test).
func TestBenchRecoveryBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--rounds", "0"}, {"--kills", "3"}, {"--placement", "random"}, {"--rate", "-1"}} {
		code, _, errs := runCLI(t, "", append([]string{"bench", "recovery"}, args...)...)
		if code != exitBadInput {
			t.Errorf("%v: exit %d (%s), want %d", args, code, errs, exitBadInput)
		}
	}
}

// TestBenchRelayJSON runs both modes for real: the across-process rows come
// from a child process (this test binary as the real CLI, `bench
// relay-peer`), which is what childEnv=real is for.
func TestBenchRelayJSON(t *testing.T) {
	t.Setenv(childEnv, "real")
	var out, errb bytes.Buffer
	code := run([]string{"bench", "relay", "--rows", "16,512", "--mb", "1", "--rounds", "1", "--latency", "5", "--format", "json"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rows []map[string]any
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 6: %v", len(rows), rows)
	}
	want := [][2]string{{"in-process", "nats/16"}, {"in-process", "inproc/16"}, {"across-processes", "nats/16"},
		{"in-process", "nats/512"}, {"in-process", "inproc/512"}, {"across-processes", "nats/512"}}
	for i, w := range want {
		if rows[i]["mode"] != w[0] || rows[i]["case"] != w[1] {
			t.Errorf("row %d is %v/%v, want %v", i, rows[i]["mode"], rows[i]["case"], w)
		}
	}
	for _, r := range []map[string]any{rows[0], rows[2], rows[5]} {
		for _, k := range []string{"batches_s", "relay_mb_s", "raw_mb_s", "ratio", "p50_us", "p99_us", "raw_p50_us", "raw_p99_us", "cpu_ratio"} {
			v, ok := r[k].(float64)
			if !ok || v <= 0 {
				t.Errorf("row lacks a positive %q: %v", k, r)
			}
		}
		for _, k := range []string{"added_p50_us", "added_p99_us"} {
			if _, ok := r[k].(float64); !ok {
				t.Errorf("row lacks %q: %v", k, r)
			}
		}
	}
	for _, s := range []string{"ratio", "across-processes round 1", "bench relay: "} {
		if !strings.Contains(errb.String(), s) {
			t.Errorf("no %q in the progress: %s", s, errb.String())
		}
	}
}

// TestBenchRelayCredentials runs bench relay across processes against a
// server that wants a password, given in the --nats URL: the bench and its
// peer process connect, and the peer's command line (what ps shows every
// user) holds no password; the peer gets it from its environment.
func TestBenchRelayCredentials(t *testing.T) {
	const secret = "pw-bench-S3CRET"
	srv, err := natsserver.Start(natsserver.Options{Configure: func(so *server.Options) {
		so.Users = append(so.Users, &server.User{Username: "bench", Password: secret})
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	argv := filepath.Join(t.TempDir(), "argv")
	t.Setenv(childEnv, "real")
	t.Setenv(argvLogEnv, argv)
	var out, errb bytes.Buffer
	url := "nats://bench:" + secret + "@" + strings.TrimPrefix(srv.ClientURL(), "nats://")
	code := run([]string{"bench", "relay", "--nats", url, "--mode", "processes", "--rows", "16", "--mb", "1", "--rounds", "1", "--latency", "5", "--format", "json"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "across-processes") {
		t.Errorf("no across-processes row: %s", out.String())
	}
	b, err := os.ReadFile(argv)
	if err != nil {
		t.Fatalf("the peer process did not start: %v", err)
	}
	if !strings.Contains(string(b), "relay-peer") || !strings.Contains(string(b), "--nats-user bench") {
		t.Errorf("peer command line %q, want relay-peer with --nats-user bench", b)
	}
	if strings.Contains(string(b), secret) {
		t.Errorf("the peer's command line holds the password: %s", b)
	}
	if strings.Contains(out.String()+errb.String(), secret) {
		t.Errorf("the output holds the password:\n%s\n%s", out.String(), errb.String())
	}
}

// TestBenchRelayPeerBadInput: the hidden relay-peer is registered and, run
// by hand, exits 2 naming what it needs.
func TestBenchRelayPeerBadInput(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"bench", "relay-peer"}, nil, &out, &errb); code != exitBadInput {
		t.Errorf("relay-peer without --control: exit %d", code)
	}
}
