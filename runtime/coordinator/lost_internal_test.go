package coordinator

import (
	"slices"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// TestCountCoreNATSWhileRecovering: what is published on a query's core
// NATS stream while the query is re-deployed is counted as lost (the end
// marker aside); other subjects are not counted.
func TestCountCoreNATSWhileRecovering(t *testing.T) {
	nc := embeddedNATS(t)
	c := &Coordinator{nc: nc}
	script := deploy.Script{Filename: "q.sql", Source: "CREATE STREAM s (a INT) FROM NATS 'lost.in' FORMAT JSON;\nSELECT a FROM s;\n"}
	done := c.countCoreNATS(script, true)
	for i := range 5 {
		if err := nc.Publish("lost.in", []byte(`{"a":1}`)); err != nil {
			t.Fatal(i, err)
		}
	}
	_ = nc.Publish("other.subject", []byte(`{"a":1}`))
	end := nats.NewMsg("lost.in")
	end.Header.Set(deploy.HeaderEnd, "1")
	_ = nc.PublishMsg(end)
	if n := done(); n != 5 {
		t.Fatalf("counted %d lost messages, want 5", n)
	}
	// Unsubscribed: later messages are not counted.
	_ = nc.Publish("lost.in", []byte(`{"a":1}`))
	if n := done(); n != 5 {
		t.Fatalf("counted %d after unsubscribing, want 5", n)
	}
}

// TestCoreNATSOfThePlacedPlan: the core NATS subjects a placed query reads
// come from the plan its placement bound (deployFirst parses nothing more
// before the start): a NATS stream's subject, not a file stream's, as
// binding the script again finds them.
func TestCoreNATSOfThePlacedPlan(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want []string
	}{
		{"CREATE STREAM s (a INT) FROM NATS 'lost.in' FORMAT JSON;\nCREATE STREAM f (a INT) FROM FILE 'f.csv' FORMAT CSV;\nSELECT s.a FROM s JOIN f ON s.a = f.a;\n", []string{"lost.in"}},
		{"CREATE STREAM f (a INT) FROM FILE 'f.csv' FORMAT CSV;\nSELECT a FROM f;\n", nil},
	} {
		script := deploy.Script{Filename: "q.sql", Source: tc.src}
		bound, _, err := script.Bind(nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := coreNATSOf(bound); !slices.Equal(got, tc.want) {
			t.Errorf("%q: coreNATSOf = %q, want %q", tc.src, got, tc.want)
		}
		if got := (&Coordinator{}).coreNATSSubjects(script); !slices.Equal(got, tc.want) {
			t.Errorf("%q: coreNATSSubjects = %q, want %q", tc.src, got, tc.want)
		}
	}
	if got := coreNATSOf(nil); got != nil {
		t.Errorf("no plan: %q", got)
	}
}

// embeddedNATS starts an embedded NATS server for the test and connects
// to it; both go at the test's end.
func embeddedNATS(t *testing.T) *nats.Conn {
	t.Helper()
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := natsserver.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}
