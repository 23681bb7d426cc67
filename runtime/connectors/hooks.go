package connectors

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/catalog"
)

// Hooks builds the catalog's NATS and JetStream streams and sinks for
// operators/exec: pass Hooks.Stream as exec.Options.Stream and Hooks.Sink as
// exec.Options.Sink.
type Hooks struct {
	// Registry of connectors (nil: Builtins()).
	Registry *Registry
	// Conn is called when a plan first needs NATS (so a command can start an
	// embedded server only then).
	Conn func() (*nats.Conn, error)
	// Sources and Sinks hold settings for every source and sink (batch size and
	// delay, error policy, queue group, durable name, ack window, End); the
	// subject, format, schema, event time and report come from the plan.
	Sources SourceConfig
	Sinks   SinkConfig
	// Check, when set, vets a stream's subject (publish false) or a
	// sink's (publish true) before anything connects: a worker checks
	// every subject of a submitted query against its owner's authority
	// (runtime/security.CheckSubject), whichever path built the source.
	Check func(subject string, publish bool) error
}

func (h Hooks) registry() *Registry {
	if h.Registry == nil {
		return Builtins()
	}
	return h.Registry
}

func (h Hooks) conn() (*nats.Conn, error) {
	if h.Conn == nil {
		return nil, fmt.Errorf("%w: no NATS connection", ErrConfig)
	}
	return h.Conn()
}

// Stream builds the source of a stream FROM NATS or FROM JETSTREAM (format
// default JSON), emitting the columns of schema: where cols is set, those
// declared columns alone (exec.Options.Stream).
func (h Hooks) Stream(s *catalog.Stream, schema *arrow.Schema, cols []int, et sources.EventTime, report *sources.Report) (func() (dataflow.Operator, error), error) {
	c, err := h.registry().Lookup(strings.ToLower(s.Source), s.Format)
	if err != nil {
		return nil, err
	}
	if h.Check != nil {
		if err := h.Check(s.Subject, false); err != nil {
			return nil, fmt.Errorf("stream %s: %w", s.Name, err)
		}
	}
	nc, err := h.conn()
	if err != nil {
		return nil, err
	}
	cfg := h.Sources
	cfg.Conn, cfg.Subject, cfg.Format, cfg.Schema, cfg.EventTime, cfg.Report = nc, s.Subject, c.Format, schema, et, report
	cfg.Columns, cfg.Declared = cols, len(s.Columns)
	if strings.EqualFold(s.Source, JetStream) {
		cfg.Name = s.Name
	}
	if s.SourceMaxDelayMs > 0 {
		cfg.MaxDelay = time.Duration(s.SourceMaxDelayMs * float64(time.Millisecond))
	}
	mk, err := c.NewSource(cfg)
	if err != nil {
		return nil, err
	}
	// What the source says it waits on when nothing arrives.
	what := fmt.Sprintf("stream %s, %s subject %q", s.Name, sourceName(s.Source), s.Subject)
	return func() (dataflow.Operator, error) {
		op, err := mk()
		if w, ok := op.(interface{ Watch(string) }); ok {
			w.Watch(what)
		}
		return op, err
	}, nil
}

func sourceName(kind string) string {
	if strings.EqualFold(kind, JetStream) {
		return "JetStream"
	}
	return "NATS"
}

// Sink opens the writer of a sink TO NATS or TO JETSTREAM (format default
// JSON).
func (h Hooks) Sink(s *catalog.Sink, _ *arrow.Schema) (sinks.Writer, error) {
	c, err := h.registry().Lookup(strings.ToLower(s.Kind), s.Format)
	if err != nil {
		return nil, err
	}
	if h.Check != nil {
		if err := h.Check(s.Target, true); err != nil {
			return nil, fmt.Errorf("sink %s: %w", s.Name, err)
		}
	}
	nc, err := h.conn()
	if err != nil {
		return nil, err
	}
	cfg := h.Sinks
	cfg.Conn, cfg.Subject, cfg.Format = nc, s.Target, c.Format
	return c.NewSink(cfg)
}
