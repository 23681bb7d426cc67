// Package control holds the values and decision rules of the runtime's
// control loop (measure, re-plan, cut over, recover: docs/architecture.md).
// It owns what the coordinator knows about a running query beyond its
// plan: live, smoothed estimates per operator and per link (Live,
// Estimates), folded from the statistics workers already report, and the
// summary of a run (Summary: rows, drops, end-to-end latency, SLO misses,
// and the re-plans and recoveries the coordinator recorded).
//
// Its decision rules (Policy: given a running query, its workers, its live
// estimates and what its plan assumed of them, ask for a new plan or
// nothing) are SlowLink (a query off a relay link that stalls its sender),
// Drift (re-plan with the live numbers, Overrides, when one drifts past a
// threshold from the plan's, Assumed) and Jellyfish (policy_jellyfish.go
// and jellyfish.go: which variant serves which latency-bound source from
// the links' bandwidths; bench slo's harness, bench/slo/harness, runs the
// scheduler every half second). A Decision carries one Constraints value, what
// the next plan must respect whichever rule asked; Policies composes rules.
// runtime/policy plugs the rules into the mechanism with their cadence and
// their per-query state; the mechanism is runtime/coordinator's supervisor,
// which places the query again under the constraints and cuts it over to a
// new generation at the committed epoch, as a recovery from a lost worker
// does. Rules only decide; they never touch operators.
//
// control imports dataflow and relay (the measurements' types) and the
// optimizer's plain values (optimize.Reservation); never the rest of the
// planner (the coordinator puts Overrides into the planner's inputs), and
// never runtime/coordinator, runtime/worker, runtime/deploy or cmd, so
// that the protocol (runtime/deploy) can carry its values.
package control
