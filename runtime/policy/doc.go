// Package policy is where tierflow's adaptive policies plug in: one
// interface per time scale, and one list of them all (Registry).
//
//   - per batch, inside a query's operators: the adapt step's input size
//     per batch, lazy drop (operators/ml, runtime/inference; the script
//     sets them);
//   - per worker, the worker's inference scheduler (sched.Policy, chosen
//     by --sched);
//   - per query, a re-plan policy (Query): the query's supervisor attaches
//     it at placement (it builds its own state for the query) and asks its
//     state, a control.Policy, at its Cadence; a Decision's
//     control.Constraints go into the next plan. Jellyfish, slow link,
//     drift, SneakPeek;
//   - per cluster, at every placement (Cluster): the capacity the running
//     queries hold (Reservations) and whether a query may run where it was
//     placed (RealtimeAdmission: DeepQuery).
//
// The mechanism (runtime/coordinator) never names a policy: it takes a
// list (coordinator.Config.Policies; nil: Defaults) and asks each by its
// interface. A new policy is its own file here (or a decision rule in
// runtime/control with its plug-in here) and one line in Registry;
// docs/architecture.md walks through one.
//
// policy imports the planner's plain values, runtime/{control, deploy,
// dataaware} and the scheduler's names; never runtime/coordinator,
// runtime/worker, runtime/cluster or cmd.
package policy
