// Package deploy is what the coordinator, the workers and clients share to
// run a query on many workers, in four roles, each in the files that carry
// its prefix:
//
//   - wire (wire_*.go): the control protocol's subjects and messages
//     (registration, heartbeats, submission, deployment, status, stop,
//     resume, SHOW QUERIES' QueryInfo), the error kinds that cross it,
//     per-query limits, the authority a query's sources and sinks act
//     with (Access), the plan estimate and a part described to a restarted
//     coordinator;
//   - compiler front end (compile_*.go): a script (Script) bound to its
//     catalog and built into the dataflow every worker builds for itself
//     from the same text (operators/exec), with the plan's variants,
//     batching and pacing, and the logical node behind each operator;
//   - placer (place*.go): the dataflow and the workers present to a
//     Placement, which worker runs each operator instance and how every
//     edge routes batches (Pipeline, Exchange by key, Broadcast, Balance by
//     the plan's traffic shares), by rules or from the optimizer's physical
//     plan. A Placement is a plain JSON value, so the coordinator computes
//     it once and every worker applies it to the graph it builds, which
//     keeps operator closures out of the wire format;
//   - replay (replay.go): where a new generation resumes its streams after
//     a recovery or a re-plan (the committed epoch, JetStream positions).
//
// deploy imports planner, dataflow, operators/exec and relay (for its stats
// type); never the other runtime packages or cmd.
package deploy
