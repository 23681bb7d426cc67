package security_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/connectors"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/devices"
	"github.com/tierflow/tierflow/runtime/security"
	"github.com/tierflow/tierflow/runtime/worker"
)

// authorityCluster is a cluster on a generated setup whose coordinator has
// the authority file: alice may use sensors.>, bob nothing, root is an
// admin; one worker, w1, on its own creds.
type authorityCluster struct {
	*setupServer
	co *coordinator.Coordinator
	au *security.Authority
}

func startAuthority(t *testing.T) *authorityCluster {
	t.Helper()
	return startAuthorityWith(t, map[string][]string{"alice": {"sensors.>"}}, deploy.Limits{})
}

// startAuthorityWith is startAuthority with data's grants and the
// coordinator's limits.
func startAuthorityWith(t *testing.T, data map[string][]string, limits deploy.Limits) *authorityCluster {
	t.Helper()
	ss := startSetup(t, security.SetupOptions{Workers: []string{"w1"}, Clients: []string{"alice", "bob"}, Admins: []string{"root"},
		Data: data, JetStream: true})
	au, err := security.LoadAuthority(ss.s.Authority)
	if err != nil {
		t.Fatal(err)
	}
	cnc, err := ss.connect(t, "coordinator")
	if err != nil {
		t.Fatal(err)
	}
	co, err := coordinator.Start(coordinator.Config{Conn: cnc, Heartbeat: 200 * time.Millisecond, Authority: au, Limits: limits,
		Exec: cluster.ExecHooks(cnc, "", nil, 1), Placement: coordinator.PlaceRules})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { co.Close() })
	wnc, err := ss.connect(t, "w1", nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	inv := devices.Inventory{CPUs: 1}
	w, err := worker.Start(context.Background(), worker.Config{Conn: wnc, Name: "w1", Tier: "edge", Inventory: &inv,
		Exec: cluster.ExecHooks(wnc, "", nil, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return &authorityCluster{setupServer: ss, co: co, au: au}
}

func (ac *authorityCluster) client(t *testing.T, user string) *coordinator.Client {
	t.Helper()
	nc, err := ac.connect(t, user)
	if err != nil {
		t.Fatal(err)
	}
	c := coordinator.NewClient(nc)
	c.User, c.Timeout = user, 10*time.Second
	return c
}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
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

// TestQueriesActAsTheirOwner: with the coordinator's authority file, a
// query reads and writes its owner's data subjects only, through a NATS
// user minted for its part (core NATS and JetStream both work), and a
// user's query outside their grants is refused with the reason.
func TestQueriesActAsTheirOwner(t *testing.T) {
	ac := startAuthority(t)
	ctx := context.Background()
	alice := ac.client(t, "alice")
	feed, err := ac.connect(t, "alice")
	if err != nil {
		t.Fatal(err)
	}
	src := "CREATE STREAM s (n INT) FROM NATS 'sensors.a' FORMAT JSON;\n" +
		"CREATE SINK out TO JETSTREAM 'sensors.js' FORMAT JSON;\n" +
		"INSERT INTO out SELECT n * 10 AS n FROM s;\n"
	done := make(chan error, 1)
	go func() {
		_, err := alice.Submit(ctx, script(t, src), "qa", sinks.NewCSV(&lockedDiscard{}))
		done <- err
	}()
	clustertest.CheckFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		if q, ok := ac.co.Query("qa"); !ok || q.State != deploy.StateRunning {
			select {
			case err := <-done:
				t.Fatalf("qa ended: %v", err)
			default:
			}
			return errors.New("qa not running")
		}
		return nil
	})
	// Core NATS keeps nothing for a subscriber that comes later: publish
	// once the query's part listens (running is said before it may).
	acc, err := ac.srv.NATS().LookupAccount(ac.au.Account)
	if err != nil {
		t.Fatal(err)
	}
	clustertest.CheckFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		if !acc.SubscriptionInterest("sensors.a") {
			return errors.New("nothing listens on sensors.a yet")
		}
		return nil
	})
	for i := range 5 {
		_ = feed.Publish("sensors.a", fmt.Appendf(nil, `{"n":%d}`, i))
	}
	end := nats.NewMsg("sensors.a")
	end.Header.Set("Tierflow-End", "5")
	_ = feed.PublishMsg(end)
	if err := <-done; err != nil {
		t.Fatalf("alice's query over her own subjects: %v", err)
	}
	// What the sink wrote is in the stream, read back as alice's data user.
	out := &lockedBuf{}
	read := "CREATE STREAM r (n INT) FROM JETSTREAM 'sensors.js' FORMAT JSON;\nSELECT n FROM r LIMIT 5;\n"
	if _, err := alice.Submit(ctx, script(t, read), "qr", sinks.NewCSV(out)); err != nil {
		t.Fatalf("alice reads her JetStream subject: %v", err)
	}
	for _, want := range []string{"0", "10", "40"} {
		if !strings.Contains(out.String(), want+"\n") {
			t.Errorf("read back %q, want %s in it", out.String(), want)
		}
	}

	// bob was granted nothing: his query over sensors.a is refused.
	bob := ac.client(t, "bob")
	_, err = bob.Submit(ctx, script(t, "CREATE STREAM s (n INT) FROM NATS 'sensors.a' FORMAT JSON;\nSELECT n FROM s;\n"), "qb", sinks.NewCSV(&lockedDiscard{}))
	if err == nil || !strings.Contains(err.Error(), "granted no data subjects") {
		t.Errorf("bob's query over sensors.a: %v, want refused", err)
	}
	// alice outside her grants: refused too.
	_, err = alice.Submit(ctx, script(t, "CREATE STREAM s (n INT) FROM NATS 'other.a' FORMAT JSON;\nSELECT n FROM s;\n"), "qo", sinks.NewCSV(&lockedDiscard{}))
	if err == nil || !strings.Contains(err.Error(), "outside the data subjects") {
		t.Errorf("alice's query over other.a: %v, want refused", err)
	}
}

// mustMintConn connects as a data user minted for owner (as the
// coordinator mints a part's), on a fresh key.
func mustMintConn(t *testing.T, ac *authorityCluster, owner string, jsSubjects ...string) *nats.Conn {
	t.Helper()
	return mintConn(t, ac, security.MintRequest{Query: "qt", Worker: "wt", Owner: owner, JetStream: jsSubjects})
}

// mintConn connects as the data user minted for r (on a fresh key).
func mintConn(t *testing.T, ac *authorityCluster, r security.MintRequest) *nats.Conn {
	t.Helper()
	kp, _ := nkeys.CreateUser()
	r.Key, _ = kp.PublicKey()
	tok, err := ac.au.Mint(r)
	if err != nil {
		t.Fatal(err)
	}
	opts, _ := natsserver.Auth{TLSCA: ac.s.CA}.Options(ac.url)
	nc, err := nats.Connect(ac.url, append(opts, nats.UserJWT(func() (string, error) { return tok, nil }, kp.Sign),
		nats.CustomInboxPrefix(security.DataInbox(r.Query, r.Worker)), nats.MaxReconnects(0))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// TestDataUserCannotReachTheEngine: a minted data user, whatever code
// drives it (a check missed), is refused by the server everything outside
// its owner's data: the engine's subjects, other subjects, consumers that
// filter outside the grants, and other streams' creation.
func TestDataUserCannotReachTheEngine(t *testing.T) {
	ac := startAuthority(t)
	nc := mustMintConn(t, ac, "alice", "sensors.js")
	refused := func(what string, f func() error) {
		t.Helper()
		err := f()
		if err == nil {
			_ = nc.Flush()
			err = nc.LastError()
		}
		if !errors.Is(err, nats.ErrPermissionViolation) && !strings.Contains(strings.ToLower(fmt.Sprint(err)), "permission") {
			t.Errorf("%s: %v, want a permissions violation", what, err)
		}
	}
	for _, subj := range []string{deploy.QuerySubject("", "q1", "enough.w1"), deploy.RegisterSubject("evil"), deploy.UserSubject("bob", "q1", "results"),
		"other.a", "$JS.API.STREAM.DELETE.X", "$KV.b.k", "$SYS.REQ.SERVER.PING", "_INBOX_bob.x"} {
		refused("publish "+subj, func() error { return nc.Publish(subj, []byte("{}")) })
	}
	for _, subj := range []string{"tierflow.relay.>", deploy.QuerySubject("", "*", "deploy.*"), "_INBOX_bob.>", ">", "other.>"} {
		refused("subscribe "+subj, func() error { _, err := nc.SubscribeSync(subj); return err })
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		t.Cleanup(cancel)
		return ctx
	}
	// A JetStream request the server refuses gets no reply, only an
	// asynchronous permissions violation naming its subject: the call ends
	// when that violation arrives (waiting out a timeout for each was 12 of
	// the package's seconds), and counts as refused only if it arrived.
	jsRefused := func(what, apiSubject string, call func(context.Context) error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		violated := make(chan struct{})
		var once sync.Once
		logged := nc.ErrorHandler()
		nc.SetErrorHandler(func(c *nats.Conn, s *nats.Subscription, err error) {
			if logged != nil {
				logged(c, s, err)
			}
			if strings.Contains(strings.ToLower(err.Error()), "permission") && strings.Contains(err.Error(), apiSubject) {
				once.Do(func() { close(violated) })
				cancel()
			}
		})
		defer nc.SetErrorHandler(logged)
		err := call(ctx)
		select {
		case <-violated:
		default:
			t.Errorf("%s: %v, want a permissions violation for %s", what, err, apiSubject)
		}
	}
	jsRefused("a data user created a stream over the relay", "$JS.API.STREAM.CREATE.SPY", func(ctx context.Context) error {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SPY", Subjects: []string{"tierflow.relay.>"}})
		return err
	})
	// Not even a stream of its query's subject's name: the request's body
	// says what the stream captures and republishes, and one over
	// tierflow.> republished onto a data subject would read (and write)
	// every subject of the account. The coordinator makes the streams.
	jsRefused("a data user created a stream over tierflow.> republished onto its own data subject", "$JS.API.STREAM.CREATE.SENSORS_JS", func(ctx context.Context) error {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SENSORS_JS", Subjects: []string{"tierflow.>"},
			RePublish: &jetstream.RePublish{Source: ">", Destination: "sensors.leak.>"}})
		return err
	})
	coord, err := ac.connect(t, "coordinator")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connectors.EnsureStream(ctx(), coord, "sensors.js", connectors.StreamBound{}); err != nil {
		t.Fatalf("the coordinator makes the query's stream: %v", err)
	}
	if _, err := js.Stream(ctx(), "SENSORS_JS"); err != nil {
		t.Errorf("the information of its query's stream: %v", err)
	}
	own := security.ConsumerName("qt", "wt", 0, 0)
	if _, err := js.CreateOrUpdateConsumer(ctx(), "SENSORS_JS", jetstream.ConsumerConfig{Name: own, FilterSubject: "sensors.js"}); err != nil {
		t.Errorf("a consumer inside the grants: %v", err)
	}
	outside := security.ConsumerName("qt", "wt", 0, 1)
	jsRefused("a consumer filtering outside the grants was created", "$JS.API.CONSUMER.CREATE.SENSORS_JS."+outside, func(ctx context.Context) error {
		_, err := js.CreateOrUpdateConsumer(ctx, "SENSORS_JS", jetstream.ConsumerConfig{Name: outside, FilterSubject: "other.x"})
		return err
	})
	// The client names a consumer of its own (a random one) when given none.
	jsRefused("a consumer of a name not minted (the client's random one) was created", "$JS.API.CONSUMER.CREATE.SENSORS_JS.", func(ctx context.Context) error {
		_, err := js.CreateOrUpdateConsumer(ctx, "SENSORS_JS", jetstream.ConsumerConfig{FilterSubject: "sensors.js"})
		return err
	})
}

// TestDataUserTouchesOnlyItsOwnConsumers: a query part's data user may
// pull, read, delete and ack only the JetStream consumers named after its
// own part, and read only its query's streams' information (not the list
// of the account's streams): another query
// of the same owner (who could guess the consumer's name) is refused each,
// by the server, and the victim's consumer keeps its messages.
func TestDataUserTouchesOnlyItsOwnConsumers(t *testing.T) {
	ac := startAuthority(t)
	victim := mustMintConn(t, ac, "alice", "sensors.js")
	ctx := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		t.Cleanup(cancel)
		return ctx
	}
	vjs, _ := jetstream.New(victim)
	// The coordinator makes the queries' streams (no data user may):
	// sensors.other's is another query's, which the attacker's does not name.
	coord, err := ac.connect(t, "coordinator")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"sensors.js", "sensors.other"} {
		if _, err := connectors.EnsureStream(ctx(), coord, s, connectors.StreamBound{}); err != nil {
			t.Fatal(err)
		}
	}
	name := security.ConsumerName("qt", "wt", 0, 0)
	cons, err := vjs.CreateOrUpdateConsumer(ctx(), "SENSORS_JS", jetstream.ConsumerConfig{Name: name, FilterSubject: "sensors.js", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := vjs.Publish(ctx(), "sensors.js", fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// The victim pulls one message, leaving it unacked: its ack subject
	// is what an attacker would ack.
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var ackSubject string
	for m := range batch.Messages() {
		ackSubject = m.Reply()
	}
	if ackSubject == "" {
		t.Fatal("the victim's pull brought nothing")
	}

	// The attacker: a part of another query of alice's, with the same
	// JetStream subject in its query.
	denied := make(chan string, 16)
	kp, _ := nkeys.CreateUser()
	key, _ := kp.PublicKey()
	tok, err := ac.au.Mint(security.MintRequest{Query: "qx", Worker: "wt", Owner: "alice", Key: key, JetStream: []string{"sensors.js"}})
	if err != nil {
		t.Fatal(err)
	}
	opts, _ := natsserver.Auth{TLSCA: ac.s.CA}.Options(ac.url)
	attacker, err := nats.Connect(ac.url, append(opts, nats.UserJWT(func() (string, error) { return tok, nil }, kp.Sign),
		nats.CustomInboxPrefix(security.DataInbox("qx", "wt")), nats.MaxReconnects(0),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { denied <- err.Error() }))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(attacker.Close)
	for _, subj := range []string{
		"$JS.API.CONSUMER.MSG.NEXT.SENSORS_JS." + name,
		"$JS.API.CONSUMER.INFO.SENSORS_JS." + name,
		"$JS.API.CONSUMER.DELETE.SENSORS_JS." + name,
		"$JS.API.CONSUMER.CREATE.SENSORS_JS." + name + ".sensors.js",
		ackSubject,
		"$JS.API.STREAM.INFO.SENSORS_OTHER",
		// The list of the account's streams: their names are others'
		// subjects (the part is told its own streams' names).
		"$JS.API.STREAM.NAMES",
	} {
		if err := attacker.Publish(subj, []byte(`{"batch":1}`)); err != nil {
			t.Fatal(err)
		}
		_ = attacker.Flush()
		select {
		case e := <-denied:
			if !strings.Contains(e, "Permissions Violation") || !strings.Contains(e, subj) {
				t.Errorf("publish %s: %s, want a permissions violation for it", subj, e)
			}
		case <-time.After(2 * time.Second):
			t.Errorf("another query's data user published %s: not refused", subj)
		}
	}
	// Its own stream's information and consumers are still its.
	ajs, _ := jetstream.New(attacker)
	if _, err := ajs.Stream(ctx(), "SENSORS_JS"); err != nil {
		t.Errorf("the information of its own query's stream: %v", err)
	}
	if _, err := ajs.CreateOrUpdateConsumer(ctx(), "SENSORS_JS", jetstream.ConsumerConfig{Name: security.ConsumerName("qx", "wt", 0, 0), FilterSubject: "sensors.js"}); err != nil {
		t.Errorf("its own consumer: %v", err)
	}
	// The victim's consumer is there, with its messages.
	info, err := cons.Info(ctx())
	if err != nil {
		t.Fatalf("the victim's consumer after the attacks: %v", err)
	}
	if info.NumPending != 2 || info.NumAckPending != 1 {
		t.Errorf("the victim's consumer has %d pending and %d awaiting their ack, want 2 and 1", info.NumPending, info.NumAckPending)
	}
}

// TestResultsOnlyFromTheSinkPart: only the data user minted for the part
// holding a query's sink may publish the owner's results subject; the
// query's other parts, another query's part and the worker's own creds
// are refused by the server, and a results subject not the query's own is
// never minted.
func TestResultsOnlyFromTheSinkPart(t *testing.T) {
	ac := startAuthority(t)
	results := deploy.UserSubject("alice", "qt", "results")
	alice, err := ac.connect(t, "alice")
	if err != nil {
		t.Fatal(err)
	}
	got, err := alice.SubscribeSync(deploy.UserSubject("alice", "qt", ">"))
	if err != nil {
		t.Fatal(err)
	}
	_ = alice.Flush()
	refused := func(what string, nc *nats.Conn, subject string) {
		t.Helper()
		violations := make(chan error, 4)
		nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err })
		if err := nc.Publish(subject, []byte("fake")); err != nil {
			return
		}
		_ = nc.Flush()
		select {
		case err := <-violations:
			if !strings.Contains(strings.ToLower(err.Error()), "permission") {
				t.Errorf("%s publishing %s: %v, want a permissions violation", what, subject, err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s published %s: no permissions violation", what, subject)
		}
	}
	sink := mintConn(t, ac, security.MintRequest{Query: "qt", Worker: "w1", Owner: "alice", Results: results})
	if err := sink.Publish(results, []byte("rows")); err != nil {
		t.Fatal(err)
	}
	_ = sink.Flush()
	if m, err := got.NextMsg(5 * time.Second); err != nil || string(m.Data) != "rows" {
		t.Fatalf("the sink part's results did not reach alice: %v", err)
	}
	refused("the sink part", sink, deploy.UserSubject("alice", "qt", "done"))
	refused("the sink part", sink, deploy.UserSubject("alice", "other", "results"))
	refused("a part without the sink", mintConn(t, ac, security.MintRequest{Query: "qt", Worker: "w2", Owner: "alice"}), results)
	refused("another query's sink part", mintConn(t, ac, security.MintRequest{Query: "qb", Worker: "w1", Owner: "bob",
		Results: deploy.UserSubject("bob", "qb", "results")}), results)
	w1, err := ac.connect(t, "w1")
	if err != nil {
		t.Fatal(err)
	}
	refused("the worker's creds", w1, results)
	if m, err := got.NextMsg(300 * time.Millisecond); err == nil {
		t.Errorf("alice got a message she should not have: %q on %s", m.Data, m.Subject)
	}
	kp, _ := nkeys.CreateUser()
	key, _ := kp.PublicKey()
	for _, bad := range []string{results, deploy.UserSubject("bob", "qb", "done"), "sensors.x", deploy.InNamespace("ns", results), "tierflow.u.>"} {
		if _, err := ac.au.Mint(security.MintRequest{Query: "qb", Worker: "w1", Owner: "bob", Key: key, Results: bad}); err == nil {
			t.Errorf("minted bob's qb a data user publishing %s", bad)
		}
	}
	if _, err := ac.au.Mint(security.MintRequest{Query: "qb", Worker: "w1", Owner: "bob", Key: key,
		Results: deploy.InNamespace("ns", deploy.UserSubject("bob", "qb", "results"))}); err != nil {
		t.Errorf("bob's qb in namespace ns: %v", err)
	}
}
