package security_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/connectors"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// TestUserCannotFillTheStore: on a secured cluster one user's queries
// cannot fill the JetStream store every user's streams share (#25). A
// stream the coordinator makes for a query is its owner's and bounded: a
// sink writing five times its bound keeps the newest (the query does not
// fail, the stream stays within its bytes), and a user whose queries made
// --max-streams-per-user streams is refused a query that needs another,
// told which they hold, while a subject of theirs is still served and
// another user's first stream is made.
func TestUserCannotFillTheStore(t *testing.T) {
	const streamBytes, most = 64 << 10, 2
	ac := startAuthorityWith(t, map[string][]string{"alice": {"sensors.>"}, "bob": {"lab.>"}},
		deploy.Limits{StreamBytes: streamBytes, StreamsPerUser: most})
	ctx := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		t.Cleanup(cancel)
		return ctx
	}
	alice, bob := ac.client(t, "alice"), ac.client(t, "bob")
	feed, err := ac.connect(t, "alice")
	if err != nil {
		t.Fatal(err)
	}
	coord, err := ac.connect(t, "coordinator")
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(coord)
	if err != nil {
		t.Fatal(err)
	}

	// alice's sink writes 320 rows of a KiB into a stream bounded at 64.
	const rows, pad = 320, 1 << 10
	done := submitRunning(t, ac, alice, "qfill", "CREATE STREAM s (n INT, pad VARCHAR) FROM NATS 'sensors.a' FORMAT JSON;\n"+
		"CREATE SINK out TO JETSTREAM 'sensors.js1' FORMAT JSON;\nINSERT INTO out SELECT n, pad FROM s;\n")
	waitInterest(t, ac, "sensors.a")
	s, err := js.Stream(ctx(), "SENSORS_JS1")
	if err != nil {
		t.Fatalf("the stream of alice's sink: %v", err)
	}
	cfg := s.CachedInfo().Config
	if cfg.MaxBytes != streamBytes || cfg.Discard != jetstream.DiscardOld || cfg.Metadata[connectors.OwnerMetadata] != "alice" {
		t.Errorf("the stream made for alice's query: max bytes %d, discard %v, metadata %v; want %d, old, owner alice",
			cfg.MaxBytes, cfg.Discard, cfg.Metadata, streamBytes)
	}
	for i := range rows {
		if err := feed.Publish("sensors.a", fmt.Appendf(nil, `{"n":%d,"pad":%q}`, i, strings.Repeat("x", pad))); err != nil {
			t.Fatal(err)
		}
	}
	end := nats.NewMsg("sensors.a")
	end.Header.Set("Tierflow-End", fmt.Sprint(rows))
	if err := feed.PublishMsg(end); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("alice's sink past her stream's bound: %v, want the oldest discarded, not the query failed", err)
	}
	info, err := s.Info(ctx())
	if err != nil {
		t.Fatal(err)
	}
	st := info.State
	t.Logf("SENSORS_JS1: %d messages, %d bytes, sequences %d-%d", st.Msgs, st.Bytes, st.FirstSeq, st.LastSeq)
	if st.Bytes > streamBytes {
		t.Errorf("alice's stream holds %d bytes, over its bound of %d", st.Bytes, streamBytes)
	}
	if st.LastSeq < rows || st.FirstSeq <= 1 || st.Msgs >= rows {
		t.Errorf("alice's stream: sequences %d-%d, %d messages; want all %d rows written and the oldest discarded", st.FirstSeq, st.LastSeq, st.Msgs, rows)
	}

	// A second stream is hers to make; a third is not, and she is told which she holds.
	stop := submitRunning(t, ac, alice, "qsecond", "CREATE STREAM s (n INT) FROM NATS 'sensors.b' FORMAT JSON;\n"+
		"CREATE SINK out TO JETSTREAM 'sensors.js2' FORMAT JSON;\nINSERT INTO out SELECT n FROM s;\n")
	if err := alice.Stop(ctx(), "qsecond", false); err != nil {
		t.Fatal(err)
	}
	<-stop
	_, err = alice.Submit(ctx(), script(t, "CREATE STREAM s (n INT) FROM JETSTREAM 'sensors.js3' FORMAT JSON;\nSELECT n FROM s;\n"),
		"qthird", sinks.NewCSV(&lockedDiscard{}))
	if err == nil || !errors.Is(err, deploy.ErrLimit) || !strings.Contains(err.Error(), "SENSORS_JS1, SENSORS_JS2") ||
		!strings.Contains(err.Error(), "--max-streams-per-user") {
		t.Errorf("alice's query needing a third stream: %v, want refused for the limit, naming her two streams and the flag", err)
	}
	if _, err := js.Stream(ctx(), "SENSORS_JS3"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("the refused query's stream: %v, want none made", err)
	}

	// Her own subjects are still served: reading her stream needs none.
	out := &lockedBuf{}
	if _, err := alice.Submit(ctx(), script(t, "CREATE STREAM r (n INT) FROM JETSTREAM 'sensors.js1' FORMAT JSON;\nSELECT n FROM r LIMIT 1;\n"),
		"qread", sinks.NewCSV(out)); err != nil {
		t.Fatalf("alice reads her stream after the limit: %v", err)
	}
	if got := strings.TrimSpace(out.String()); !strings.HasSuffix(got, fmt.Sprint(st.FirstSeq-1)) {
		t.Errorf("alice read %q from her stream, want its oldest kept row, n=%d", got, st.FirstSeq-1)
	}

	// bob's count is his own.
	bobDone := submitRunning(t, ac, bob, "qbob", "CREATE STREAM s (n INT) FROM NATS 'lab.a' FORMAT JSON;\n"+
		"CREATE SINK out TO JETSTREAM 'lab.js' FORMAT JSON;\nINSERT INTO out SELECT n FROM s;\n")
	if bs, err := js.Stream(ctx(), "LAB_JS"); err != nil || bs.CachedInfo().Config.Metadata[connectors.OwnerMetadata] != "bob" {
		t.Errorf("bob's first stream beside alice's two: %v", err)
	}
	if err := bob.Stop(ctx(), "qbob", false); err != nil {
		t.Fatal(err)
	}
	<-bobDone
}

// submitRunning submits src as user c's query name and waits until it
// runs; the channel gets Submit's result when it ends.
func submitRunning(t *testing.T, ac *authorityCluster, c *coordinator.Client, name, src string) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := c.Submit(context.Background(), script(t, src), name, sinks.NewCSV(&lockedDiscard{}))
		done <- err
	}()
	clustertest.CheckFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		if q, ok := ac.co.Query(name); !ok || q.State != deploy.StateRunning {
			select {
			case err := <-done:
				t.Fatalf("%s ended before it ran: %v", name, err)
			default:
			}
			return fmt.Errorf("%s not running", name)
		}
		return nil
	})
	return done
}

// waitInterest waits until a query's part listens on subject: core NATS
// keeps nothing for a subscriber that comes later.
func waitInterest(t *testing.T, ac *authorityCluster, subject string) {
	t.Helper()
	acc, err := ac.srv.NATS().LookupAccount(ac.au.Account)
	if err != nil {
		t.Fatal(err)
	}
	clustertest.CheckFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		if !acc.SubscriptionInterest(subject) {
			return fmt.Errorf("nothing listens on %s yet", subject)
		}
		return nil
	})
}
