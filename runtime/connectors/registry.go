package connectors

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/operators/sources"
)

// Error kinds.
var (
	// ErrUnknown: no connector for a (kind, format).
	ErrUnknown = errors.New("connectors: no such connector")
	// ErrConfig: a connector's configuration is incomplete or inconsistent.
	ErrConfig = errors.New("connectors: bad configuration")
	// ErrTooLarge: something to publish exceeds the server's max payload
	// even as the smallest piece the format allows (one row).
	ErrTooLarge = errors.New("connectors: message over the server's max payload")
	// ErrBadMessage: a message does not decode in the stream's format.
	ErrBadMessage = errors.New("bad message")
	// ErrUpstream: the query writing a stream failed (FailedHeader).
	ErrUpstream = errors.New("the query writing the stream failed")
)

// Kinds of connectors: the transport.
const (
	NATS      = "nats"
	JetStream = "jetstream"
)

// EndHeader marks the end of a stream: a message carrying it (any value, no
// payload needed) ends the sources reading it. `tierflow publish` sends one
// after the file, and sinks send one when they close if asked (SinkConfig.End),
// so a bounded demo or test terminates; a real stream simply never sends it.
const EndHeader = "Tierflow-End"

// FailedHeader ends a stream whose writer failed: its value is the reason
// (one line). A sink of a failed query sends it instead of EndHeader, so a
// reader never takes a partial result for a complete one; tierflow's own
// sources fail with ErrUpstream when they read it.
const FailedHeader = "Tierflow-Failed"

// SourceConfig configures a source.
type SourceConfig struct {
	Conn    *nats.Conn
	Subject string
	Format  string
	// Schema of the rows: the stream's declared columns, or those of them
	// the query reads (Columns). JSON fields and Arrow columns are matched
	// to it by name; a message's others are skipped.
	Schema *arrow.Schema
	// Columns, when set, says where each column of Schema is among the
	// stream's Declared columns: a CSV message's fields are found by
	// position, and only these are converted (the others are checked as
	// CSV, not as values). Nil: Schema is every declared column.
	Columns  []int
	Declared int
	// Name is the catalog stream's name: a replayable (JetStream) source
	// records its positions under it in Report (sources.Report.Position).
	Name string
	// Queue is a core NATS queue group: instances sharing it split messages.
	Queue string
	// Stream names the JetStream stream (default: Streams[Subject], else
	// the one whose subjects hold Subject; created over Subject if none
	// does).
	Stream string
	// Streams names the stream each subject is in where the coordinator
	// said (deploy.Access.Streams): a secured cluster's data user may not
	// list streams to find it.
	Streams map[string]string
	// Durable names a durable JetStream consumer (default: ephemeral).
	Durable string
	// ConsumerName, when set, names each ephemeral JetStream consumer the
	// source makes (else the client picks a random name): a worker on a
	// secured cluster names them as its part's data user was minted to
	// use (runtime/security.ConsumerName), and no other consumer.
	ConsumerName func() string
	// StartSeq replays a JetStream stream from this sequence (0: from the
	// start, unless DeliverNew).
	StartSeq   uint64
	DeliverNew bool
	// MaxRows and MaxDelay bound a batch: it is emitted when it holds MaxRows
	// rows or MaxDelay after its first message (defaults 4096 and
	// DefaultSourceMaxDelay; a stream's catalog source_max_delay_ms wins).
	MaxRows  int
	MaxDelay time.Duration
	// PendingMsgs and PendingBytes bound what a core NATS subscription
	// buffers (default 64 MiB of payload, and as many messages as
	// PendingBytes holds of the client's ~160 bytes a message beside the
	// payload); beyond, the server's messages are dropped and counted
	// (Stats.Dropped), as core NATS does for slow consumers.
	PendingMsgs, PendingBytes int
	// MaxMessageBytes bounds a message put back together from chunks
	// (default PendingBytes); a larger one is dropped as oversized, or
	// fails the query under sources.Fail.
	MaxMessageBytes int
	// MaxAckPending bounds unacknowledged JetStream messages (default
	// 4*MaxRows): the server stops delivering until the batch is emitted.
	MaxAckPending int
	EventTime     sources.EventTime
	OnError       sources.OnError
	Report        *sources.Report
	Stats         *Stats
}

// SinkConfig configures a sink.
type SinkConfig struct {
	Conn    *nats.Conn
	Subject string
	Format  string
	// Stream is the JetStream stream to create over Subject if no stream
	// holds it yet (default: Streams[Subject], else a name derived from
	// the subject).
	Stream string
	// Streams: as SourceConfig's.
	Streams map[string]string
	// Window bounds JetStream publishes awaiting their ack (default 256).
	Window int
	// IDPrefix, when set, gives every JetStream message written through
	// WriteEpoch a message id from it, the epoch and the message's bytes
	// (sinks.EpochWriter), which the stream dedupes within its duplicates
	// window: a re-deployed generation of the same query (IDPrefix, its
	// id) that writes a result again does not add it twice.
	IDPrefix string
	// End publishes an EndHeader message when the sink closes.
	End   bool
	Stats *Stats
}

// Component is one registered connector.
type Component struct {
	Kind, Format string
	Doc          string
	NewSource    func(SourceConfig) (func() (dataflow.Operator, error), error)
	NewSink      func(SinkConfig) (sinks.Writer, error)
}

// Registry holds connectors by (kind, format).
type Registry struct {
	m map[[2]string]Component
}

// NewRegistry is an empty registry.
func NewRegistry() *Registry { return &Registry{m: map[[2]string]Component{}} }

// Register adds c, replacing a connector of the same kind and format.
func (r *Registry) Register(c Component) {
	r.m[[2]string{c.Kind, c.Format}] = c
}

// Lookup finds the connector of kind and format (case-insensitive; "jsonl"
// and "ipc" are JSON and Arrow).
func (r *Registry) Lookup(kind, format string) (Component, error) {
	kind, format = strings.ToLower(kind), normFormat(format)
	c, ok := r.m[[2]string{kind, format}]
	if !ok {
		var have []string
		for _, c := range r.Components() {
			have = append(have, c.Kind+"/"+c.Format)
		}
		return Component{}, fmt.Errorf("%w: %s format %s (have %s)", ErrUnknown, kind, format, strings.Join(have, ", "))
	}
	return c, nil
}

// Components lists the registered connectors, sorted.
func (r *Registry) Components() []Component {
	out := make([]Component, 0, len(r.m))
	for _, c := range r.m {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Format < out[j].Format
	})
	return out
}

func normFormat(f string) string {
	switch f = strings.ToLower(f); f {
	case "", "jsonl", "ndjson":
		return "json"
	case "ipc":
		return "arrow"
	}
	return f
}

// Builtins registers every transport with every format: core NATS and
// JetStream, each in Arrow IPC, JSON and CSV.
func Builtins() *Registry {
	r := NewRegistry()
	for _, f := range formats() {
		f := f
		r.Register(Component{Kind: NATS, Format: f.name, Doc: "core NATS subject, " + f.doc,
			NewSource: func(c SourceConfig) (func() (dataflow.Operator, error), error) {
				return newSource(c, f, newNATSInput)
			},
			NewSink: func(c SinkConfig) (sinks.Writer, error) { return newNATSOutput(c, f) }})
		r.Register(Component{Kind: JetStream, Format: f.name, Doc: "JetStream stream, " + f.doc,
			NewSource: func(c SourceConfig) (func() (dataflow.Operator, error), error) {
				return newSource(c, f, newJetStreamInput)
			},
			NewSink: func(c SinkConfig) (sinks.Writer, error) { return newJetStreamOutput(c, f) }})
	}
	return r
}
