package security_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/operators/sinks"

	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/devices"
	"github.com/tierflow/tierflow/runtime/security"
	"github.com/tierflow/tierflow/runtime/worker"
)

// TestRelayLinksOnlyBetweenTheirWorkers: on a generated setup with a creds
// file per worker, a query whose scan runs on w1 (edge) and whose sink
// runs on w2 (cloud) moves its rows over the relay, while each worker's
// creds are refused every relay subject but its own links': w2 cannot
// send frames as w1 (fake rows or credit on a link it is not the sender
// of), nor in the unnamed form, nor read links between other workers or
// the whole relay.
func TestRelayLinksOnlyBetweenTheirWorkers(t *testing.T) {
	ss := startSetup(t, security.SetupOptions{Workers: []string{"w1", "w2", "w3"}, Clients: []string{"alice"},
		Data: map[string][]string{"alice": {"sensors.>"}}})
	au, err := security.LoadAuthority(ss.s.Authority)
	if err != nil {
		t.Fatal(err)
	}
	cnc, err := ss.connect(t, "coordinator")
	if err != nil {
		t.Fatal(err)
	}
	co, err := coordinator.Start(coordinator.Config{Conn: cnc, Heartbeat: 200 * time.Millisecond, Authority: au,
		Exec: cluster.ExecHooks(cnc, "", nil, 1), Placement: coordinator.PlaceRules})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { co.Close() })
	for name, tier := range map[string]string{"w1": "edge", "w2": "cloud"} {
		wnc, err := ss.connect(t, name)
		if err != nil {
			t.Fatal(err)
		}
		inv := devices.Inventory{CPUs: 1}
		w, err := worker.Start(context.Background(), worker.Config{Conn: wnc, Name: name, Tier: tier, Inventory: &inv,
			Exec: cluster.ExecHooks(wnc, "", nil, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
	}
	anc, err := ss.connect(t, "alice")
	if err != nil {
		t.Fatal(err)
	}
	alice := coordinator.NewClient(anc)
	alice.User, alice.Timeout = "alice", 10*time.Second
	clustertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if ws, err := alice.Workers(context.Background()); err != nil || len(ws) != 2 {
			return fmt.Errorf("workers %v %v", ws, err)
		}
		return nil
	})

	out := &lockedBuf{}
	done := make(chan error, 1)
	var info deploy.QueryInfo
	go func() {
		var err error
		info, err = alice.Submit(context.Background(), script(t, "CREATE STREAM s (n INT) FROM NATS 'sensors.r' FORMAT JSON;\nSELECT n * 10 AS n FROM s;\n"), "qr", sinks.NewCSV(out))
		done <- err
	}()
	acc, err := ss.srv.NATS().LookupAccount(au.Account)
	if err != nil {
		t.Fatal(err)
	}
	clustertest.CheckFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		select {
		case err := <-done:
			t.Fatalf("qr ended: %v", err)
		default:
		}
		if !acc.SubscriptionInterest("sensors.r") {
			return errors.New("nothing listens on sensors.r yet")
		}
		return nil
	})
	q, _ := co.Query("qr")
	if len(q.Workers) != 2 {
		t.Fatalf("qr runs on %v, want w1 and w2 (a link between them)", q.Workers)
	}
	for i := range 5 {
		_ = anc.Publish("sensors.r", fmt.Appendf(nil, `{"n":%d}`, i))
	}
	end := nats.NewMsg("sensors.r")
	end.Header.Set("Tierflow-End", "5")
	_ = anc.PublishMsg(end)
	if err := <-done; err != nil {
		t.Fatalf("a query across two workers with creds of their own: %v (%s)", err, info.Error)
	}
	for _, want := range []string{"0", "10", "40"} {
		if !strings.Contains(out.String(), want+"\n") {
			t.Errorf("qr's rows %q, want %s in them", out.String(), want)
		}
	}

	// The attacks, each refused by the server.
	w2, err := ss.connect(t, "w2")
	if err != nil {
		t.Fatal(err)
	}
	violations := make(chan error, 16)
	w2.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err })
	refused := func(what, subject string) {
		t.Helper()
		deadline := time.After(5 * time.Second)
		for {
			select {
			case err := <-violations:
				if strings.Contains(strings.ToLower(err.Error()), "permission") && strings.Contains(err.Error(), subject) {
					return
				}
			case <-deadline:
				t.Errorf("w2 %s %s: no permissions violation", what, subject)
				return
			}
		}
	}
	for _, s := range []string{
		"tierflow.relay.w1.w2.qr.0.0.0.d",     // a frame as w1, on a link w1 sends
		"tierflow.relay.w3.w1.qr.0.0.0.c",     // credit as w3
		"tierflow.relay.qr.0.0.0.d",           // the unnamed form
		"tierflow.ns1.relay.w1.w2.qr.1.0.0.d", // in another namespace
	} {
		_ = w2.Publish(s, []byte("fake"))
		_ = w2.Flush()
		refused("publishing", s)
	}
	for _, s := range []string{"tierflow.relay.>", "tierflow.relay.w1.w3.>", "tierflow.relay.*.w1.>"} {
		if _, err := w2.SubscribeSync(s); err != nil {
			t.Fatal(err)
		}
		_ = w2.Flush()
		refused("reading", s)
	}
	// Its own links' subjects are its to use.
	if _, err := w2.SubscribeSync("tierflow.relay.w1.w2.>"); err != nil {
		t.Fatal(err)
	}
	if err := w2.Publish("tierflow.relay.w2.w1.qr.0.0.0.c", []byte("x")); err != nil {
		t.Fatal(err)
	}
	_ = w2.Flush()
	select {
	case err := <-violations:
		t.Errorf("w2 on its own links: %v", err)
	case <-time.After(300 * time.Millisecond): // no violation arrives: the server accepted both
	}
}
