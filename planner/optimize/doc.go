// Package optimize finds the cheapest physical plan (compute + network cost per
// hour) for an operator DAG on a tiered infrastructure, under accuracy and
// throughput targets, following JellyBean (sections 4 and 6) and the cost model of
// its published prototype.
//
// It owns: the optimizer's input (Problem) and output (Plan, Assignment) as plain
// Go values with stable JSON encodings, the CostModel interface and its default
// PrototypeModel, Evaluate (cost and check a given assignment), and the strategies
// (jellybean, exhaustive, best-fit, first-fit, most-accurate, ptc, pte, spc,
// auto) reachable by name through an explicit Registry value; the dual objective
// (WithinBudget: the most accurate plan within a cost per hour) and the
// accuracy/cost Pareto frontier (Frontier), both exact; and capacity held by
// running queries (Problem.Reserved, ReservationsOf).
//
// It imports nothing of tierflow: catalog, infrastructure and query are lowered into
// a Problem by the planner package, which keeps this package free of YAML, SQL and
// file formats and lets tests build problems directly.
//
// Decision space (shared by every strategy and by Evaluate). A plan picks, per
// operator, one variant and an ordered list of distinct workers; a worker serves at
// most one operator. Workers are filled in list order at full capacity and the last
// one carries only the remainder of the operator's demand T_v (the prototype's
// rule). The exact strategy searches all variant combinations and all such
// (worker set, remainder worker) choices in which every worker is needed (the set
// without its remainder worker falls short of T_v) and A2 holds; the order of the
// saturated workers does not change any cost, so only the set and the remainder
// worker matter.
//
// Use:
//
//	plan, err := optimize.DefaultRegistry().Optimize(ctx, "auto", problem, optimize.Options{})
//	plan, err := optimize.Evaluate(problem, assignment, nil) // cost a given plan
//
// Speed: the exact search treats interchangeable workers (same tier, location,
// price, capacities and links: the "count: N" workers of an infrastructure
// file) as one class with a count, drops worker sets dominated by a smaller
// set in the same place, and allocates nothing per search node. Over the
// bench-planner sweep of every Table-4 setup (BenchmarkSweep: 20 throughput
// and accuracy targets each) auto proves the optimum in about 1-5 ms of CPU at
// p95 (2-core machine). Thirty workers that all differ slightly can exceed the
// time budget; auto then returns its best plan (never worse than jellybean's)
// with GaveUp set. Explaining an infeasible target runs further feasibility
// searches near the capacity limit and can take up to its own budget (1 s).
package optimize
