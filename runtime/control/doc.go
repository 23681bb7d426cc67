// Package control is the runtime's control loop: measure, re-plan, cut over,
// recover (DESIGN.md). It holds what the coordinator knows about a running
// query beyond its plan: live, smoothed estimates per operator and per link
// (Live, Estimates), folded from the statistics workers already report; the
// policies that read them (Policy: given a running query, its workers, its
// live estimates and what its plan assumed of them, ask for a new plan or
// nothing; SlowLink moves a query off a relay link that stalls its sender;
// Drift re-plans with the live numbers (Overrides) when one drifts past a
// threshold from the plan's (Assumed); Policies composes several); and the
// summary of a run
// (Summary: rows, drops, end-to-end latency, SLO misses, and the re-plans
// and recoveries the coordinator recorded); and the Jellyfish scheduler
// (jellyfish.go: which variant serves which latency-bound client at which
// batch size, from the clients' link bandwidths), which bench slo's
// harness (bench/slo/harness) adaptive policy runs every half second.
//
// The mechanism is the coordinator's (runtime/coordinator): it asks the
// policy once a second per query, and both a re-plan and a recovery from a
// lost worker deploy the query again as a new generation that cuts over at
// the committed epoch, replaying its file and JetStream streams to rebuild
// operator state, while the client writes each epoch's results once.
// Policies only decide; they never touch operators.
//
// control imports dataflow and relay (the measurements' types); never the
// planner (the coordinator puts Overrides into the planner's inputs), and never
// runtime/coordinator, runtime/worker, runtime/deploy or cmd, so that the
// protocol (runtime/deploy) can carry its values.
package control
