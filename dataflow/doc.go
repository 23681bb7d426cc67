// Package dataflow is tierflow's timely-style execution core: epochs and
// frontiers (via dataflow/progress), the operator API with capabilities and
// notifications, graph construction from a description, worker scheduling
// (deterministic stepping or one goroutine per operator instance), bounded
// queues, exchange partitioning and the Transport interface that carries
// batches and progress between workers.
//
// It knows nothing of NATS, ONNX or SQL and must not import planner,
// operators, relay, runtime or cmd: relational operators are written against
// this API in operators/, and relay/ implements Transport over NATS.
//
// # Data and ownership
//
// The unit on an edge is a Batch: an arrow.Record at an Epoch. Every record
// is released exactly once, and a reference always has exactly one owner:
//
//   - An operator receiving a Batch in OnBatch owns its record: it must
//     Release it, keep it (and release it later, at the latest in Close), or
//     hand it on with Emit.
//   - Emit always takes the caller's reference, whether it succeeds or
//     fails; an operator that wants to keep using the record Retains first.
//   - The engine Retains for fan-out (one output feeding several edges,
//     broadcast) and releases what partitioning copies away.
//   - A Message handed to Sender.Send or Inbox.Deliver is owned by the
//     callee from then on, also on error.
//   - On cancellation the engine releases everything still queued and calls
//     every operator's Close, which must release operator state.
//
// # Progress
//
// Progress travels node to node along the data edges (JellyBean section 5),
// never all-to-all: after an operator instance's output frontier advances,
// it sends a Progress message on each channel of that output. Channels are
// FIFO per (edge, sender, receiver), so a frontier never overtakes the data it
// covers. See package progress for the state machine.
//
// # Operators
//
// An OperatorSpec declares inputs, outputs and connectivity at build time
// and makes one Operator per instance. Callbacks (Open, OnBatch, OnNotify,
// Close; optionally Source.Produce, FrontierObserver.OnFrontier,
// Waker.OnWake) run one at a time per instance. An operator emits only under
// a Capability it holds (ErrNoCapability otherwise); it can retain, delay,
// downgrade and drop capabilities, ask to be notified when an epoch is
// complete on all inputs (Context.NotifyAt) and ask to be woken after a
// delay (Context.WakeAfter).
//
// # Graphs and placement
//
// A Graph lists operators with the worker of each instance (operator-level
// parallelism: different workers run different operators; data
// parallelism: several instances of one operator) and edges that are
// Pipeline, Exchange (rows hash-partitioned by a vectorised PartitionFunc),
// Broadcast or Balance (whole batches by traffic shares). Every worker
// builds its part from the same Graph with NewWorker.
//
// # Scheduling
//
// The same operator code runs in two modes. Worker.Step runs each local
// instance once on what is queued, in the caller's goroutine, for
// deterministic tests; Worker.Run runs one goroutine per instance with
// bounded queues, so a slow consumer blocks its producers (backpressure) and
// memory stays bounded however fast a source is. Cancelling Run's context
// aborts (everything is closed and released); Worker.StopSources or
// Config.Stop stops gracefully (sources end, everything else drains).
//
// Subpackages: progress (the pure tracker), builtin (sources, map and sinks
// for tests and benchmarks), transporttest (the conformance suite every
// Transport passes).
package dataflow
