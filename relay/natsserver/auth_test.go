package natsserver

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"nats://alice:s3cret@host:4222":                    "nats://REDACTED@host:4222",
		"connect to tls://tok@h:1: refused":                "connect to tls://REDACTED@h:1: refused",
		"nats://a:x@h1:4222,nats://b:y@h2:4222":            "nats://REDACTED@h1:4222,nats://REDACTED@h2:4222",
		"nats://127.0.0.1:4222":                            "nats://127.0.0.1:4222",
		"server nats://u:p%40ss@h:4222 and http://x:y@z/a": "server nats://REDACTED@h:4222 and http://REDACTED@z/a",
		// Passwords holding what a regex would stop at (#25).
		"nats://bob:b0b,comma@host":             "nats://REDACTED@host",
		"nats://bob:p@ss@host:4222":             "nats://REDACTED@host:4222",
		"nats://bob:a/b/c@host:4222":            "nats://REDACTED@host:4222",
		"dial nats://bob:x,nats://y@h: refused": "dial nats://REDACTED@h: refused",
		"nats://h1:4222,nats://bob:s,e@h2:4222": "nats://h1:4222,nats://REDACTED@h2:4222",
		"connect to \"tls://u:p:w@h\" failed":   "connect to \"tls://REDACTED@h\" failed",
		"1nats://u:p@h":                         "1nats://REDACTED@h",
		"no url ://here, user@host":             "no url ://here, user@host",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRedactNeverShowsAPassword: whatever characters a password holds
// (every printable ASCII one but white space), no part of it prints, in a
// URL alone, in a list of URLs, or inside a message.
func TestRedactNeverShowsAPassword(t *testing.T) {
	var special []byte
	for c := byte('!'); c <= '~'; c++ {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			special = append(special, c)
		}
	}
	for _, c := range special {
		pw := "Zq" + string(c) + "Xw" + string(c) + "Vk"
		for _, in := range []string{
			"nats://bob:" + pw + "@host:4222",
			"nats://h0:1,nats://bob:" + pw + "@host:4222,nats://h2:3",
			"error: connect nats://" + pw + "@host: refused",
			"url=nats://bob:" + pw + "@host,x",
		} {
			out := Redact(in)
			for _, part := range []string{"Zq", "Xw", "Vk"} {
				if strings.Contains(out, part) {
					t.Errorf("Redact(%q) = %q: shows part of the password", in, out)
					break
				}
			}
		}
	}
}

func TestIdentity(t *testing.T) {
	dir := t.TempDir()
	akp, _ := nkeys.CreateAccount()
	ukp, _ := nkeys.CreateUser()
	upub, _ := ukp.PublicKey()
	uc := jwt.NewUserClaims(upub)
	uc.Name = "alice"
	tok, err := uc.Encode(akp)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := ukp.Seed()
	creds, _ := jwt.FormatUserConfig(tok, seed)
	credsFile, seedFile := filepath.Join(dir, "alice.creds"), filepath.Join(dir, "u.nk")
	os.WriteFile(credsFile, creds, 0o600)
	os.WriteFile(seedFile, seed, 0o600)
	garbage := filepath.Join(dir, "garbage.nk")
	os.WriteFile(garbage, []byte("not a seed"), 0o600)
	for _, tc := range []struct {
		a    Auth
		url  string
		want string
	}{
		{Auth{Creds: credsFile}, "", "alice"},
		{Auth{NKey: seedFile}, "", upub},
		{Auth{User: "bob", Password: "x"}, "nats://carol:y@h:1", "bob"},
		{Auth{}, "nats://carol:y@h:1", "carol"},
		{Auth{}, "nats://h:1", Anonymous},
	} {
		got, err := tc.a.Identity(tc.url)
		if err != nil || got != tc.want {
			t.Errorf("Identity(%+v, %s) = %q %v, want %q", tc.a, tc.url, got, err, tc.want)
		}
	}
	for _, bad := range []Auth{
		{Creds: credsFile, User: "x"},
		{Creds: filepath.Join(dir, "missing.creds")},
		{NKey: garbage},
		{TLSCert: credsFile},
		{User: "a.b"},
	} {
		if _, err := bad.Options(""); !errors.Is(err, ErrAuth) {
			t.Errorf("Options(%+v): %v, want ErrAuth", bad, err)
		}
	}
}

// TestAuthConnects: a server that wants an nkey user or a password admits
// the Auth that has it and refuses one that does not; replies come to the
// identity's own inbox.
func TestAuthConnects(t *testing.T) {
	ukp, _ := nkeys.CreateUser()
	upub, _ := ukp.PublicKey()
	seed, _ := ukp.Seed()
	seedFile := filepath.Join(t.TempDir(), "u.nk")
	os.WriteFile(seedFile, seed, 0o600)
	srv, err := Start(Options{Configure: func(so *server.Options) {
		so.Nkeys = []*server.NkeyUser{{Nkey: upub}}
		so.Users = []*server.User{{Username: "bob", Password: "pw"}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	for _, a := range []Auth{{NKey: seedFile}, {User: "bob", Password: "pw"}} {
		opts, err := a.Options(srv.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		nc, err := srv.Connect(opts...)
		if err != nil {
			t.Fatalf("%+v: %v", a, err)
		}
		id, _ := a.Identity("")
		if inbox := nc.NewRespInbox(); !strings.HasPrefix(inbox, InboxPrefix(id)+".") {
			t.Errorf("inbox %s, want under %s", inbox, InboxPrefix(id))
		}
		nc.Close()
	}
	opts, _ := Auth{User: "bob", Password: "nope"}.Options("")
	if _, err := srv.Connect(append(opts, nats.MaxReconnects(0), nats.Timeout(time.Second))...); err == nil || strings.Contains(err.Error(), "nope") {
		t.Fatalf("wrong password: %v", err)
	}
}

type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestPermissionViolationLine: a publish and a subscription the server
// refuses print one tierflow line each, naming the subject and the user,
// never the password and never nats.go's raw line.
func TestPermissionViolationLine(t *testing.T) {
	const secret = "pw-S3CRET-alice"
	srv, err := Start(Options{Configure: func(so *server.Options) {
		so.Users = []*server.User{{Username: "alice", Password: secret, Permissions: &server.Permissions{
			Publish: &server.SubjectPermission{Allow: []string{"feed.>"}}, Subscribe: &server.SubjectPermission{Allow: []string{"feed.>"}}}}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	out := &lockedBuf{}
	asyncErrOut = out
	defer func() { asyncErrOut = os.Stderr }()
	url := "nats://alice:" + secret + "@" + strings.TrimPrefix(srv.ClientURL(), "nats://")
	opts, err := Auth{}.Options(url)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.Publish("feed.ok", nil)
	_ = nc.Publish("tierflow.q.qa.stop", []byte("x"))
	if _, err := nc.SubscribeSync("tierflow.u.bob.>"); err != nil {
		t.Fatal(err)
	}
	_ = nc.Flush()
	want := []string{
		"tierflow: NATS refused publish to tierflow.q.qa.stop: permissions violation for user alice\n",
		"tierflow: NATS refused subscription to tierflow.u.bob.>: permissions violation for user alice\n",
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && strings.Count(out.String(), "\n") < len(want) {
		time.Sleep(10 * time.Millisecond)
	}
	got := out.String()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("no %q in:\n%s", w, got)
		}
	}
	if strings.Count(got, "\n") != len(want) || strings.Contains(got, "nats:") || strings.Contains(got, secret) {
		t.Errorf("want exactly the two tierflow lines, without secrets:\n%s", got)
	}
}
