// Package control is the runtime's control loop: measure, re-plan, cut over,
// recover (DESIGN.md). It holds what the coordinator knows about a running
// query beyond its plan. Today that is the measuring side: live, smoothed
// estimates per operator and per link (Live, Estimates), folded from the
// statistics workers already report, and the summary of a finished run
// (Summary: rows, drops, end-to-end latency, SLO misses, and the re-plans and
// recoveries the later parts of the loop will record). Triggers, policies,
// re-planning and cut-over belong here too, beside Live, not as flags on
// operators.
//
// control imports dataflow and relay (the measurements' types); never
// runtime/coordinator, runtime/worker, runtime/deploy or cmd, so that the
// protocol (runtime/deploy) can carry its values.
package control
