package security_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/devices"
	"github.com/tierflow/tierflow/runtime/security"
	"github.com/tierflow/tierflow/runtime/worker"
)

// confineFixture is a data root with a good CSV, a symlink out of it, a
// directory beside it and a catalog outside it.
type confineFixture struct {
	root, outside string
	roots         *security.Roots
}

func newConfineFixture(t *testing.T) confineFixture {
	t.Helper()
	base := t.TempDir()
	f := confineFixture{root: filepath.Join(base, "data"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{f.root, f.outside, filepath.Join(f.root, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(f.root, "good.csv"), []byte("n\n1\n2\n"), 0o644)
	os.WriteFile(filepath.Join(f.outside, "secret.csv"), []byte("n\n42\n"), 0o644)
	os.Symlink("/etc/passwd", filepath.Join(f.root, "passwd.csv"))
	os.Symlink(f.outside, filepath.Join(f.root, "out"))
	os.Symlink(filepath.Join(f.root, "good.csv"), filepath.Join(f.root, "sub", "inside.csv"))
	roots, err := security.NewRoots([]string{f.root})
	if err != nil {
		t.Fatal(err)
	}
	f.roots = roots
	return f
}

func TestRootsCheck(t *testing.T) {
	f := newConfineFixture(t)
	for _, p := range []string{
		"/etc/passwd",
		filepath.Join(f.root, "passwd.csv"),        // symlink to /etc/passwd
		filepath.Join(f.root, "out", "secret.csv"), // through a symlinked directory
		f.root + "/../outside/secret.csv",
		f.root + "/sub/../good.csv", // .. even when it stays inside
		"../outside/secret.csv",
		filepath.Join(f.root, "out", "new.csv"), // a sink's new file behind a symlink
		f.root + "-sibling/x.csv",               // a prefix is not a parent
		"good.csv",                              // relative: unresolved
	} {
		if _, err := f.roots.Check(p); !errors.Is(err, security.ErrConfined) {
			t.Errorf("Check(%s): %v, want ErrConfined", p, err)
		}
	}
	for p, want := range map[string]string{
		filepath.Join(f.root, "good.csv"):          "good.csv",
		filepath.Join(f.root, "sub", "inside.csv"): "good.csv", // a symlink within the root resolves
		filepath.Join(f.root, "sub", "new.csv"):    filepath.Join("sub", "new.csv"),
	} {
		got, err := f.roots.Check(p)
		if err != nil {
			t.Errorf("Check(%s): %v", p, err)
			continue
		}
		if real, _ := filepath.EvalSymlinks(f.root); got != filepath.Join(real, want) {
			t.Errorf("Check(%s) = %s, want %s", p, got, filepath.Join(real, want))
		}
	}
	// Outside the roots, whether the file exists does not show.
	_, e1 := f.roots.Check("/etc/passwd")
	_, e2 := f.roots.Check("/etc/no-such-file")
	if strings.Replace(e1.Error(), "passwd", "no-such-file", 1) != e2.Error() {
		t.Errorf("refusals differ for a file that exists and one that does not:\n%v\n%v", e1, e2)
	}
	var none *security.Roots
	if got, err := none.Check("/etc/passwd"); err != nil || got != "/etc/passwd" {
		t.Errorf("no roots: %s %v, want everything allowed (tierflow run)", got, err)
	}
	if _, err := security.NewRoots([]string{filepath.Join(f.root, "good.csv")}); err == nil {
		t.Error("a file as --data-root accepted")
	}
}

// TestWorkerConfined deploys scripts that name files outside the worker's
// data root straight to the worker (no coordinator to stop them first) and
// through a coordinator with the same roots: every one is refused with the
// reason, and a query on the root's own file runs.
func TestWorkerConfined(t *testing.T) {
	f := newConfineFixture(t)
	srv := clustertest.NATSServer(t)
	cnc, wnc := clustertest.Connect(t, srv), clustertest.Connect(t, srv)
	co, err := coordinator.Start(coordinator.Config{Conn: cnc, Heartbeat: 200 * time.Millisecond, DataRoots: f.roots,
		Exec: cluster.ExecHooks(cnc, "", nil, 1), Placement: coordinator.PlaceRules})
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	inv := devices.Inventory{CPUs: 1}
	w, err := worker.Start(context.Background(), worker.Config{Conn: wnc, Name: "w1", Tier: "edge", Inventory: &inv,
		DataRoots: f.roots, Exec: cluster.ExecHooks(wnc, "", nil, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	client := coordinator.NewClient(clustertest.Connect(t, srv))

	script := func(from string) deploy.Script {
		src := "CREATE STREAM s (n INT) FROM FILE '" + from + "' FORMAT CSV;\nSELECT n FROM s;\n"
		return deploy.Script{Filename: filepath.Join(f.root, "q.sql"), Source: src, BaseDir: f.root}
	}
	bad := map[string]deploy.Script{
		"/etc/passwd":         script("/etc/passwd"),
		"symlink escape":      script("passwd.csv"),
		"symlinked dir":       script("out/secret.csv"),
		"dot-dot":             script("../outside/secret.csv"),
		"base dir outside":    {Filename: filepath.Join(f.outside, "q.sql"), BaseDir: f.outside, Source: "CREATE STREAM s (n INT) FROM FILE 'secret.csv' FORMAT CSV;\nSELECT n FROM s;\n"},
		"dot-dot inside":      script("sub/../good.csv"),
		"catalog /etc/passwd": {Filename: filepath.Join(f.root, "q.sql"), BaseDir: f.root, Catalog: "/etc/passwd", Source: "CREATE STREAM s (n INT) FROM FILE 'good.csv' FORMAT CSV;\nSELECT n FROM s;\n"},
	}
	for name, sc := range bad {
		// Straight to the worker, as a rogue coordinator would.
		body, _ := json.Marshal(deploy.DeployRequest{Query: "direct", Script: sc, Placement: deploy.Placement{Query: "direct", Workers: []string{"w1"}}})
		msg, err := wnc.Request(deploy.DeploySubject("", "direct", "w1"), body, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var ack deploy.Ack
		json.Unmarshal(msg.Data, &ack)
		if !strings.Contains(ack.Error, security.ErrConfined.Error()) || strings.Contains(ack.Error, "root:") {
			t.Errorf("%s deployed to the worker: %q, want refused as outside the data roots", name, ack.Error)
		}
		// Through the coordinator.
		var out strings.Builder
		_, err = client.Submit(context.Background(), sc, "", sinks.NewCSV(&out))
		if err == nil || !strings.Contains(err.Error(), security.ErrConfined.Error()) || !errors.Is(err, deploy.ErrInput) {
			t.Errorf("%s submitted: %v, want a bad-input refusal naming the data roots", name, err)
		}
		if strings.Contains(out.String()+errString(err), "root:") {
			t.Errorf("%s: /etc/passwd content leaked: %s %v", name, out.String(), err)
		}
	}
	var out strings.Builder
	info, err := client.Submit(context.Background(), script("good.csv"), "", sinks.NewCSV(&out))
	if err != nil || info.ResultRows != 2 {
		t.Fatalf("query inside the root: %v %+v\n%s", err, info, out.String())
	}
	// alice's query, straight to the worker: it reads the shared file but
	// writes only under her own directory.
	for i, target := range []string{"good.csv", "bob/x.csv", "alice/out.csv"} {
		ok, q := i == 2, fmt.Sprintf("sink%d", i)
		sc := script("good.csv")
		sc.Source = "CREATE STREAM s (n INT) FROM FILE 'good.csv' FORMAT CSV;\nCREATE SINK o TO FILE '" + target + "' FORMAT CSV;\nINSERT INTO o SELECT n FROM s;\n"
		body, _ := json.Marshal(deploy.DeployRequest{Query: q, Script: sc, Owner: "alice", Placement: deploy.Placement{Query: q, Workers: []string{"w1"}}})
		msg, err := wnc.Request(deploy.DeploySubject("", q, "w1"), body, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var ack deploy.Ack
		json.Unmarshal(msg.Data, &ack)
		if refused := strings.Contains(ack.Error, "writes files only under "+filepath.Join(f.root, "alice")); refused == ok {
			t.Errorf("alice's sink to %s: %q, want allowed %v", target, ack.Error, ok)
		}
		if _, err := os.Stat(filepath.Join(f.root, target)); ok && err != nil {
			// The sink's file is made as the part is built, before the
			// worker matches the part to its placement (which this
			// hand-made request has not).
			t.Errorf("alice's sink to her own %s: %q, file %v", target, ack.Error, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(f.root, "good.csv")); err != nil || string(b) != "n\n1\n2\n" {
		t.Errorf("the shared file after alice's sinks: %q %v", b, err)
	}
}

// TestConfineOwnerWrites: on a shared worker a query reads the roots and
// writes only under its owner's directory, which comes with the first
// file; a symlink out of it, .. and another user's directory are refused;
// an anonymous owner (an open cluster) writes anywhere under the roots.
func TestConfineOwnerWrites(t *testing.T) {
	f := newConfineFixture(t)
	var eo exec.Options
	sc := deploy.Script{Filename: filepath.Join(f.root, "q.sql"), BaseDir: f.root}
	if err := f.roots.ConfineOwner("alice", &sc, &eo); err != nil || eo.ConfineWrite == nil {
		t.Fatalf("ConfineOwner: %v, write check %v", err, eo.ConfineWrite != nil)
	}
	if _, err := eo.Confine(filepath.Join(f.root, "good.csv")); err != nil {
		t.Errorf("alice reading the shared file: %v", err)
	}
	real, _ := filepath.EvalSymlinks(f.root)
	if got, err := eo.ConfineWrite(filepath.Join(f.root, "alice", "day", "out.csv")); err != nil || got != filepath.Join(real, "alice", "day", "out.csv") {
		t.Errorf("alice writing her own file: %s %v", got, err)
	}
	os.Symlink(f.outside, filepath.Join(f.root, "alice", "esc"))
	for _, p := range []string{
		filepath.Join(f.root, "good.csv"),
		filepath.Join(f.root, "bob", "x.csv"),
		filepath.Join(f.root, "alice", "esc", "deeper", "x.csv"),
		filepath.Join(f.root, "alice", "..", "bob", "x.csv"),
		filepath.Join(f.root, "alice", "esc", "x.csv"),
		filepath.Join(f.outside, "alice", "x.csv"),
	} {
		if _, err := eo.ConfineWrite(p); !errors.Is(err, security.ErrConfined) || !errors.Is(err, deploy.ErrInput) {
			t.Errorf("alice writing %s: %v, want refused", p, err)
		}
	}
	for _, d := range []string{filepath.Join(f.root, "bob"), filepath.Join(f.outside, "deeper")} {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("a refused write made %s", d)
		}
	}
	var open exec.Options
	if err := f.roots.ConfineOwner("anonymous", &sc, &open); err != nil || open.ConfineWrite != nil {
		t.Errorf("an anonymous owner: %v, write check %v, want the roots alone", err, open.ConfineWrite != nil)
	}
	if err := f.roots.ConfineOwner("../x", &sc, &open); err == nil {
		t.Error("an owner with a slash accepted")
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestConfineModels: a model file outside the roots (or a symlink out of
// them) is refused before the model runtime sees it; one inside is handed
// on by its resolved path. The catalog file is checked too.
func TestConfineModels(t *testing.T) {
	f := newConfineFixture(t)
	os.WriteFile(filepath.Join(f.root, "m.onnx"), []byte("model"), 0o644)
	os.Symlink("/etc/passwd", filepath.Join(f.root, "evil.onnx"))
	called := 0
	eo := exec.Options{Lateral: func(n *logical.LateralModel, in *arrow.Schema) (func() (dataflow.Operator, error), *arrow.Schema, error) {
		called++
		return nil, nil, nil
	}}
	sc := deploy.Script{Catalog: "/etc/passwd"}
	if err := f.roots.ConfineScript(&sc, &eo); !errors.Is(err, security.ErrConfined) || !errors.Is(err, deploy.ErrInput) {
		t.Fatalf("catalog /etc/passwd: %v", err)
	}
	sc.Catalog = ""
	if err := f.roots.ConfineScript(&sc, &eo); err != nil {
		t.Fatal(err)
	}
	pos := catalog.Pos{File: filepath.Join(f.root, "q.sql")}
	for _, file := range []string{"/etc/passwd", "evil.onnx", "../outside/secret.csv"} {
		m := &catalog.Model{Name: "m", Variants: []*catalog.Variant{{Name: "v", File: file, Pos: pos}}}
		if _, _, err := eo.Lateral(&logical.LateralModel{Model: m}, nil); !errors.Is(err, security.ErrConfined) {
			t.Errorf("model file %s: %v, want ErrConfined", file, err)
		}
	}
	if called != 0 {
		t.Fatalf("the model runtime was called %d times for refused files", called)
	}
	m := &catalog.Model{Name: "m", Variants: []*catalog.Variant{{Name: "v", File: "m.onnx", Pos: pos}}}
	if _, _, err := eo.Lateral(&logical.LateralModel{Model: m}, nil); err != nil || called != 1 {
		t.Fatalf("model inside the root: %v (runtime called %d)", err, called)
	}
	if real, _ := filepath.EvalSymlinks(filepath.Join(f.root, "m.onnx")); m.Variants[0].File != real {
		t.Errorf("variant file %s, want the resolved %s", m.Variants[0].File, real)
	}
	// The coordinator's binder reads model files to check a call's
	// arguments: it reads none outside the roots either.
	checked := 0
	check := f.roots.ConfineModelArgs(func(*catalog.Model, []arrow.DataType) (int, error) { checked++; return 0, nil }, f.root)
	evil := &catalog.Model{Name: "m", Variants: []*catalog.Variant{{Name: "v", File: "evil.onnx", Pos: pos}}}
	if _, err := check(evil, nil); !errors.Is(err, security.ErrConfined) || checked != 0 {
		t.Errorf("model argument check of a file outside: %v (checker called %d)", err, checked)
	}
}

// TestRootsRefuseSecrets: a data root that holds the process's credentials
// (or the directory they share with the other roles') is refused at start,
// by a link too; secrets beside the root, not under it, are fine.
func TestRootsRefuseSecrets(t *testing.T) {
	base := t.TempDir()
	data, sec := filepath.Join(base, "srv"), filepath.Join(base, "secrets")
	for _, d := range []string{filepath.Join(data, "secrets"), sec} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(data, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	roots, err := security.NewRoots([]string{data})
	if err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(data, "secrets", "w1.creds")
	for _, secrets := range []map[string]string{
		{"--nats-creds": inside},
		{"--tls-ca": filepath.Join(sec, "ca.pem"), "--nats-nkey": filepath.Join(base, "link", "secrets", "w1.nk")},
		{"--nats-config": filepath.Join(data, "server.conf")},
	} {
		err := roots.RefuseSecrets(secrets)
		if !errors.Is(err, security.ErrSecretsServed) || !strings.Contains(err.Error(), data) {
			t.Errorf("%v: %v, want refused naming the root %s", secrets, err, data)
		}
	}
	if err := roots.RefuseSecrets(map[string]string{"--nats-creds": filepath.Join(sec, "w1.creds"), "--tls-ca": filepath.Join(sec, "ca.pem"), "--nats-nkey": ""}); err != nil {
		t.Errorf("secrets beside the root: %v", err)
	}
	var none *security.Roots
	if err := none.RefuseSecrets(map[string]string{"--nats-creds": inside}); err != nil {
		t.Errorf("no roots: %v", err)
	}
}
