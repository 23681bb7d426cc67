// Package connectors owns tierflow's sources and sinks on NATS subjects: core
// NATS subscriptions and JetStream consumers in, core NATS and JetStream
// (acknowledged) publishes out, each in the formats Arrow IPC, JSON and CSV.
//
// Components are registered by (kind, format) in an explicit Registry
// (Builtins). Sources are dataflow operators: operators/sources' event-time
// Source over a reader that batches messages into Arrow records (at most
// MaxRows rows, at most MaxDelay after the first, DefaultSourceMaxDelay
// unless set; each record is stamped with its first message's arrival, so
// the wait counts in its rows' end-to-end latency); sinks are
// operators/sinks Writers, so the executor's sink operator drives them. Hooks
// adapts both to operators/exec (Options.Stream, Options.Sink): that is how
// `tierflow run` and the runtime workers use them.
//
// A message that cannot be decoded is marked (counted in the source's
// sources.Report, terminated on JetStream so it is not redelivered) and the
// stream goes on, unless the policy is sources.Fail.
//
// It may import dataflow, operators, relay/frame (the hardened Arrow decoder)
// and relay/natsserver; it must not import
// the rest of runtime or cmd.
package connectors
