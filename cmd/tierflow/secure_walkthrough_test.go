package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// walkthrough is the secure walkthrough of docs/operations.md as its
// commands, one per role: each shell line (continuations joined) split into
// words as a shell would (single quotes only; the block has no other).
func walkthrough(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "## A secure cluster")
	if !ok {
		t.Fatal("docs/operations.md has no secure cluster section")
	}
	_, rest, _ = strings.Cut(rest, "```sh\n")
	block, _, _ := strings.Cut(rest, "```")
	var cmds [][]string
	for _, line := range strings.Split(strings.ReplaceAll(block, "\\\n", " "), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var words []string
		for _, m := range regexp.MustCompile(`'[^']*'|\S+`).FindAllString(line, -1) {
			words = append(words, strings.Trim(m, "'"))
		}
		if words[0] != "bin/tierflow" {
			t.Fatalf("walkthrough line %q is not a tierflow command", line)
		}
		cmds = append(cmds, words[1:])
	}
	if len(cmds) != 4 {
		t.Fatalf("the walkthrough has %d commands, want 4 (setup, coordinator, worker, submit): one command per role", len(cmds))
	}
	return cmds
}

// TestSecureWalkthroughAttacks runs docs/operations.md's secure walkthrough
// as written (the host, its port and the directories replaced by the
// test's: nats.example.com is 127.0.0.1, the server listens on a free
// port, secrets/ and /srv/tierflow are temporary), then the attacks of #25
// against it, each refused: a client's query reaching the engine's
// subjects, the same subjects straight from another client's creds, a
// second process taking a live worker's name, another worker's "enough"
// for a query it does not run, files outside the data root (the password
// file, the TLS key, the coordinator's creds) through a script and through
// the catalog field, with no content in an error, the log or SHOW QUERIES;
// SHOW WORKERS naming another user's query; 1,000 submits in a loop; a
// 7.5 MB script. A coordinator of the same setup without --data-root reads
// no file at all.
func TestSecureWalkthroughAttacks(t *testing.T) {
	dir := t.TempDir()
	sec, data := filepath.Join(dir, "secrets"), filepath.Join(dir, "srv")
	os.Mkdir(data, 0o755)
	clustertest.WriteData(t, data, 2000)
	var url string
	sub := func(args []string) []string {
		out := make([]string, 0, len(args))
		for _, a := range args {
			a = strings.ReplaceAll(a, "tls://nats.example.com:4222", url)
			a = strings.ReplaceAll(a, "nats.example.com", "127.0.0.1")
			a = strings.ReplaceAll(a, "/srv/tierflow", data)
			if rest, ok := strings.CutPrefix(a, "secrets"); ok {
				a = sec + rest
			}
			if a == "query.sql" {
				a = filepath.Join(data, "query.sql")
			}
			out = append(out, a)
		}
		return out
	}
	cmds := walkthrough(t)
	setup, coord, worker, submit := sub(cmds[0]), sub(cmds[1]), cmds[2], cmds[3]
	if code, out, errs := runCLI(t, "", append(setup, "--listen", "127.0.0.1:-1")...); code != exitOK {
		t.Fatalf("%v: exit %d\n%s\n%s", setup, code, out, errs)
	}
	coordOut := startTierflow(t, append(coord, "--heartbeat", "200ms", "--placement", "rules")...)
	clustertest.CheckFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		for _, line := range strings.Split(coordOut.String(), "\n") {
			if rest, ok := strings.CutPrefix(line, "coordinator on "); ok {
				url = strings.TrimSpace(rest)
				return nil
			}
		}
		return fmt.Errorf("coordinator not up:\n%s", coordOut.String())
	})
	startTierflow(t, sub(worker)...)
	ca, creds := filepath.Join(sec, "ca.pem"), func(u string) string { return filepath.Join(sec, u+".creds") }
	as := func(user string, rest ...string) []string {
		return append([]string{"submit", "--nats", url, "--nats-creds", creds(user), "--tls-ca", ca}, rest...)
	}
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	show := write("show.sql", "SHOW WORKERS;\n")
	clustertest.CheckFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		if code, out, errs := runCLI(t, "", as("alice", show)...); code != exitOK || !strings.Contains(out, "w1") {
			return fmt.Errorf("SHOW WORKERS: exit %d %s %s", code, out, errs)
		}
		return nil
	})
	// The walkthrough's last command: alice's query runs.
	if code, out, errs := runCLI(t, "", append(sub(submit), "--format", "csv")...); code != exitOK || !strings.Contains(out, "north") {
		t.Fatalf("the walkthrough's submit: exit %d\n%s\n%s", code, out, errs)
	}
	connect := func(user string) *nats.Conn {
		opts, err := natsserver.Auth{Creds: creds(user), TLSCA: ca}.Options(url)
		if err != nil {
			t.Fatal(err)
		}
		nc, err := natsserver.Connect(url, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}

	// A long query of alice's, on w1: what the attacks aim at.
	long := write("long.sql", "CREATE STREAM s (n INT) FROM NATS 'sensors.long' FORMAT JSON;\nSELECT n FROM s;\n")
	longDone := make(chan string, 1)
	go func() {
		_, out, errs := runCLI(t, "", as("alice", "--name", "along", long)...)
		longDone <- out + errs
	}()
	admin := connect("ops")
	queries := func(nc *nats.Conn, user string) []deploy.QueryInfo {
		t.Helper()
		m, err := nc.Request(deploy.QueriesSubject(user), []byte("{}"), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var qs []deploy.QueryInfo
		if err := json.Unmarshal(m.Data, &qs); err != nil {
			t.Fatal(err)
		}
		return qs
	}
	running := func() error {
		for _, q := range queries(admin, "ops") {
			if q.Query == "along" && q.State == deploy.StateRunning {
				return nil
			}
		}
		return fmt.Errorf("alice's query is not running")
	}
	clustertest.CheckFor(t, 15*time.Second, 50*time.Millisecond, running)

	t.Run("queries reaching the engine's subjects", func(t *testing.T) {
		feed := "CREATE STREAM feed (n INT) FROM NATS 'sensors.feed' FORMAT JSON;\n"
		sink := func(subject string) string {
			return feed + fmt.Sprintf("CREATE SINK out TO NATS '%s' FORMAT JSON;\nINSERT INTO out SELECT n FROM feed;\n", subject)
		}
		read := func(subject string) string {
			return fmt.Sprintf("CREATE STREAM s (n INT) FROM NATS '%s' FORMAT JSON;\nSELECT n FROM s;\n", subject)
		}
		for what, src := range map[string]string{
			"another query's enough":      sink(deploy.QuerySubject("", "along", "enough.w1")),
			"a fake worker's register":    sink(deploy.RegisterSubject("evil")),
			"rows into alice's results":   sink(deploy.UserSubject("alice", "along", "results")),
			"the relay":                   read("tierflow.relay.>"),
			"deployments":                 read(deploy.QuerySubject("", "*", "deploy.*")),
			"alice's replies":             read("_INBOX_alice.>"),
			"a subject bob was not given": read("sensors.long"),
		} {
			code, out, errs := runCLI(t, "", as("bob", write("attack.sql", src))...)
			if code != exitBadInput || !strings.Contains(errs, "not allowed") {
				t.Errorf("bob's query on %s: exit %d %q %q, want the subject refused", what, code, out, errs)
			}
		}
	})

	t.Run("the same subjects from another client's creds", func(t *testing.T) {
		violations := make(chan string, 64)
		opts, err := natsserver.Auth{Creds: creds("bob"), TLSCA: ca}.Options(url)
		if err != nil {
			t.Fatal(err)
		}
		bob, err := natsserver.Connect(url, append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			violations <- err.Error()
		}))...)
		if err != nil {
			t.Fatal(err)
		}
		defer bob.Close()
		refused := func(what, subject string) {
			deadline := time.After(5 * time.Second)
			for {
				select {
				case v := <-violations:
					if strings.Contains(v, "ermissions") && strings.Contains(v, subject) {
						return
					}
				case <-deadline:
					t.Errorf("bob %s %s: no permissions violation", what, subject)
					return
				}
			}
		}
		for _, s := range []string{deploy.QuerySubject("", "along", "enough.w1"), deploy.RegisterSubject("evil"), deploy.UserSubject("alice", "along", "results")} {
			_ = bob.Publish(s, []byte("{}"))
			_ = bob.Flush()
			refused("publishing to", s)
		}
		for _, s := range []string{"tierflow.relay.>", deploy.QuerySubject("", "*", "deploy.*"), "_INBOX_alice.>"} {
			if _, err := bob.SubscribeSync(s); err != nil {
				continue // refused by the client library already
			}
			_ = bob.Flush()
			refused("reading", s)
		}
		if err := running(); err != nil {
			t.Error(err)
		}
	})

	t.Run("a worker's creds putting rows into alice's results", func(t *testing.T) {
		// The worker's own NATS user carries no query's results: only the
		// data user minted for the part holding the sink may (and alice's
		// query above got its rows that way).
		for _, s := range []string{deploy.UserSubject("alice", "along", "results"), deploy.UserSubject("alice", "along", "done"),
			deploy.InNamespace("ns1", deploy.UserSubject("alice", "along", "results"))} {
			if err := publishRefused(url, ca, creds("w1"), s); err != nil {
				t.Errorf("w1's creds: %v", err)
			}
		}
		if err := running(); err != nil {
			t.Error(err)
		}
	})

	t.Run("a worker's creds on other workers' relay links", func(t *testing.T) {
		// A relay subject names the worker that publishes on it, then
		// the one that reads it: w1 may send only as itself and read
		// only what is sent to it.
		for _, s := range []string{"tierflow.relay.w2.w1.along.0.0.0.d", "tierflow.relay.along.0.0.0.d"} {
			if err := publishRefused(url, ca, creds("w1"), s); err != nil {
				t.Errorf("w1's creds: %v", err)
			}
		}
		violations := make(chan string, 4)
		nc := connect("w1")
		nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err.Error() })
		if _, err := nc.SubscribeSync("tierflow.relay.>"); err != nil {
			t.Fatal(err)
		}
		_ = nc.Flush()
		select {
		case v := <-violations:
			if !strings.Contains(v, "ermissions") {
				t.Errorf("w1 reading the whole relay: %s", v)
			}
		case <-time.After(5 * time.Second):
			t.Error("w1 reads the whole relay: no permissions violation")
		}
	})

	t.Run("a second process with a live worker's name", func(t *testing.T) {
		nc := connect("w1")
		kp, _ := nkeys.CreateUser()
		key, _ := kp.PublicKey()
		body, _ := json.Marshal(deploy.WorkerInfo{Name: "w1", Tier: "edge", DataKey: key})
		m, err := nc.Request(deploy.RegisterSubject("w1"), body, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var rep deploy.RegisterReply
		_ = json.Unmarshal(m.Data, &rep)
		if rep.Error == "" || !rep.Alive {
			t.Errorf("w1's name taken by a second process: %+v", rep)
		}
		if err := running(); err != nil {
			t.Error(err)
		}
	})

	secrets := map[string]string{"/etc/passwd": "/etc/passwd", "the TLS key": filepath.Join(sec, "server-key.pem"), "the coordinator's creds": creds("coordinator")}
	var contents []string
	for _, p := range secrets {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%s: %v (the attack needs the file)", p, err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); len(line) >= 12 && !strings.HasPrefix(line, "-----") && !strings.HasPrefix(line, "*") {
				contents = append(contents, line)
			}
		}
	}
	leaks := func(what, text string) {
		t.Helper()
		for _, c := range contents {
			if strings.Contains(text, c) {
				t.Errorf("%s quotes a file's content %q", what, c)
				return
			}
		}
	}
	t.Run("files outside the data root", func(t *testing.T) {
		for what, p := range secrets {
			for form, src := range map[string]string{
				"a table with columns":    fmt.Sprintf("CREATE TABLE t (a VARCHAR) FROM FILE '%s' FORMAT CSV;\nSELECT a FROM t;\n", p),
				"a table without columns": fmt.Sprintf("CREATE TABLE t FROM FILE '%s' FORMAT CSV;\nSELECT * FROM t;\n", p),
				"a stream":                fmt.Sprintf("CREATE STREAM s (a VARCHAR) FROM FILE '%s' FORMAT CSV;\nSELECT a FROM s;\n", p),
			} {
				code, out, errs := runCLI(t, "", as("bob", write("file.sql", src))...)
				if code == exitOK || !strings.Contains(errs, "outside") {
					t.Errorf("%s through %s: exit %d %q, want refused as outside the data root", what, form, code, errs)
				}
				leaks(what+" through "+form, out+errs)
			}
			// The catalog field as a client of its own writes it (tierflow
			// submit --catalog reads the client's own file, not this one).
			rep := submitRaw(t, connect("bob"), "bob", deploy.SubmitRequest{Query: "cat" + strings.Map(func(r rune) rune {
				if r >= 'a' && r <= 'z' {
					return r
				}
				return -1
			}, what), Script: deploy.Script{Filename: filepath.Join(data, "one.sql"),
				Source: "CREATE STREAM s (n INT) FROM NATS 'sensors.x' FORMAT JSON;\nSELECT n FROM s;\n", BaseDir: data, Catalog: p}})
			if !strings.Contains(rep.Error, "outside") {
				t.Errorf("%s as the catalog: %q, want refused", what, rep.Error)
			}
			leaks(what+" as the catalog", rep.Error)
		}
		b, _ := json.Marshal(queries(admin, "ops"))
		leaks("SHOW QUERIES", string(b))
		leaks("the coordinator's log", coordOut.String())
	})

	t.Run("SHOW WORKERS names only one's own queries", func(t *testing.T) {
		_, out, _ := runCLI(t, "", as("bob", show)...)
		if strings.Contains(out, "along") {
			t.Errorf("bob's SHOW WORKERS names alice's query:\n%s", out)
		}
		_, out, _ = runCLI(t, "", as("alice", show)...)
		if !strings.Contains(out, "along") {
			t.Errorf("alice's SHOW WORKERS does not name her query:\n%s", out)
		}
	})

	t.Run("1000 submits in a loop", func(t *testing.T) {
		nc := connect("alice")
		script := deploy.Script{Filename: filepath.Join(data, "query.sql"), Source: clustertest.Query, BaseDir: data}
		var bobErr error
		var bobTook time.Duration
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(200 * time.Millisecond) // into the loop (not synchronisation: bob's query must run whenever it comes)
			start := time.Now()
			code, out, errs := runCLI(t, "", as("bob", "--format", "csv", filepath.Join(data, "query.sql"))...)
			bobTook = time.Since(start)
			if code != exitOK || !strings.Contains(out, "north") {
				bobErr = fmt.Errorf("exit %d %s %s", code, out, errs)
			}
		}()
		accepted, limited := 0, 0
		start := time.Now()
		for i := range 1000 {
			body, _ := json.Marshal(deploy.SubmitRequest{Query: fmt.Sprintf("loop%d", i), Script: script})
			m, err := nc.Request(deploy.SubmitSubject("alice"), body, 30*time.Second)
			if err != nil {
				t.Fatalf("submit %d: %v", i, err)
			}
			var rep deploy.SubmitReply
			_ = json.Unmarshal(m.Data, &rep)
			switch {
			case rep.Error == "":
				accepted++
			case strings.Contains(rep.Error, "resource limit"):
				limited++
			}
		}
		took := time.Since(start)
		wg.Wait()
		if bobErr != nil {
			t.Errorf("bob's query during alice's loop: %v", bobErr)
		}
		t.Logf("1000 submits in %s: %d accepted, %d refused over a limit; bob's query took %s meanwhile", took.Round(time.Millisecond), accepted, limited, bobTook.Round(time.Millisecond))
		// The coordinator's default: a burst of 30, then 60 a minute.
		if bound := 30 + int(took.Minutes()*60) + 1; accepted > bound {
			t.Errorf("%d of 1000 submits accepted in %s, want at most %d (the per-user rate)", accepted, took, bound)
		}
		if n := len(queries(nc, "alice")); n > 100+4 {
			t.Errorf("SHOW QUERIES keeps %d of alice's queries, want at most 100 ended and 4 running", n)
		}
	})

	t.Run("a 7.5 MB script", func(t *testing.T) {
		nc := connect("bob")
		src := strings.Repeat("-- padding padding padding padding padding padding padding padding padding\n", 7_500_000/76) + clustertest.Query
		body, _ := json.Marshal(deploy.SubmitRequest{Query: "big", Script: deploy.Script{Filename: filepath.Join(data, "big.sql"), Source: src, BaseDir: data}})
		m, err := nc.Request(deploy.SubmitSubject("bob"), body, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var rep deploy.SubmitReply
		_ = json.Unmarshal(m.Data, &rep)
		if !strings.Contains(rep.Error, "over the coordinator's limit") {
			t.Errorf("a %d-byte submission: %q, want refused for its size", len(body), rep.Error)
		}
	})

	t.Run("a coordinator without --data-root reads no file", func(t *testing.T) {
		args := slicesWithout(coord, "--data-root", data)
		other := startTierflow(t, append(args, "--heartbeat", "200ms")...)
		var ourl string
		clustertest.CheckFor(t, 15*time.Second, 20*time.Millisecond, func() error {
			for _, line := range strings.Split(other.String(), "\n") {
				if rest, ok := strings.CutPrefix(line, "coordinator on "); ok {
					ourl = strings.TrimSpace(rest)
					return nil
				}
			}
			return fmt.Errorf("coordinator not up:\n%s", other.String())
		})
		base := []string{"submit", "--nats", ourl, "--nats-creds", creds("alice"), "--tls-ca", ca}
		for what, args := range map[string][]string{
			"the walkthrough's query": {filepath.Join(data, "query.sql")},
			"/etc/passwd":             {write("pw.sql", "CREATE TABLE t FROM FILE '/etc/passwd' FORMAT CSV;\nSELECT * FROM t;\n")},
		} {
			code, out, errs := runCLI(t, "", append(base, args...)...)
			if code == exitOK || !strings.Contains(errs, "no --data-root") {
				t.Errorf("%s on a coordinator without --data-root: exit %d %q, want every path refused", what, code, errs)
			}
			leaks(what, out+errs)
		}
		onc, err := natsserver.Connect(ourl, must(natsserver.Auth{Creds: creds("alice"), TLSCA: ca}.Options(ourl))...)
		if err != nil {
			t.Fatal(err)
		}
		defer onc.Close()
		rep := submitRaw(t, onc, "alice", deploy.SubmitRequest{Query: "cat", Script: deploy.Script{Filename: filepath.Join(data, "one.sql"),
			Source: "CREATE STREAM s (n INT) FROM NATS 'sensors.x' FORMAT JSON;\nSELECT n FROM s;\n", BaseDir: data, Catalog: creds("coordinator")}})
		if !strings.Contains(rep.Error, "no --data-root") {
			t.Errorf("the catalog field on a coordinator without --data-root: %q, want refused", rep.Error)
		}
		leaks("the catalog field", rep.Error)
		leaks("the second coordinator's log", other.String())
	})

	if err := running(); err != nil {
		t.Errorf("after the attacks: %v", err)
	}
	body, _ := json.Marshal(deploy.StopRequest{Query: "along", Abort: true})
	if _, err := connect("alice").Request(deploy.StopSubject("alice"), body, 5*time.Second); err != nil {
		t.Errorf("stop along: %v", err)
	}
	select {
	case <-longDone:
	case <-time.After(15 * time.Second):
		t.Error("alice's long query did not end once stopped")
	}
}

// publishRefused publishes to subject as the user of creds and waits for
// the server's permissions violation: nil if it came.
func publishRefused(url, ca, creds, subject string) error {
	violations := make(chan string, 16)
	opts, err := natsserver.Auth{Creds: creds, TLSCA: ca}.Options(url)
	if err != nil {
		return err
	}
	nc, err := natsserver.Connect(url, append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		violations <- err.Error()
	}))...)
	if err != nil {
		return err
	}
	defer nc.Close()
	if err := nc.Publish(subject, []byte("{}")); err != nil {
		return nil // refused by the client library already
	}
	_ = nc.Flush()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case v := <-violations:
			if strings.Contains(v, "ermissions") && strings.Contains(v, subject) {
				return nil
			}
		case <-deadline:
			return fmt.Errorf("publishing to %s: no permissions violation", subject)
		}
	}
}

// submitRaw sends a submission as a client that writes its own request.
func submitRaw(t *testing.T, nc *nats.Conn, user string, req deploy.SubmitRequest) deploy.SubmitReply {
	t.Helper()
	body, _ := json.Marshal(req)
	m, err := nc.Request(deploy.SubmitSubject(user), body, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var rep deploy.SubmitReply
	if err := json.Unmarshal(m.Data, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// slicesWithout is args without the flag and value pair.
func slicesWithout(args []string, flag, value string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == flag && i+1 < len(args) && args[i+1] == value {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}
