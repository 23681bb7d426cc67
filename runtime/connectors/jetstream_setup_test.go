package connectors_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/runtime/connectors"
)

// jetStreamTest is what every JetStream connector test starts from: an
// embedded server with JetStream, a connection to it, a checked allocator
// (checked when the test ends) and the JetStream connector for format.
func jetStreamTest(t *testing.T, format string) (*nats.Conn, *memory.CheckedAllocator, connectors.Component) {
	t.Helper()
	nc := connect(t, startServer(t))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	c, err := connectors.Builtins().Lookup(connectors.JetStream, format)
	if err != nil {
		t.Fatal(err)
	}
	return nc, mem, c
}

// newJetStream is nc's JetStream context; with a name, it first creates
// that stream over subjects.
func newJetStream(t *testing.T, nc *nats.Conn, name string, subjects ...string) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if name != "" {
		if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: name, Subjects: subjects}); err != nil {
			t.Fatal(err)
		}
	}
	return js
}

// sensorsRead runs the source mk makes to its end and returns the first
// column of the rows it emitted (the sensors), space separated.
func sensorsRead(t *testing.T, mem memory.Allocator, mk func() (dataflow.Operator, error)) string {
	t.Helper()
	out := newTextWriter()
	if err := runSource(t, mem, mk, out, nil)(); err != nil {
		t.Fatal(err)
	}
	var sensors []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
		sensors = append(sensors, strings.Split(l, ",")[0])
	}
	return strings.Join(sensors, " ")
}
