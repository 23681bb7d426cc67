// Package rewrite holds the logical rewrite rules, one per file, each with a
// typed id, run in a fixed order by Apply: filters move below ML operators (a
// model should not score rows a filter on its input drops), columns no later
// operator reads are dropped before anything crosses a link (after a model
// call's expression arguments became a projection below it), and a
// latency-bound query's size-adaptive model call over a UNION ALL becomes a
// call per source. AdaptInputs runs after model selection, since it depends
// on the chosen variants: it resizes images before their link. Rules take and
// return immutable logical plans. It imports the planner's catalog, logical
// and expr packages only.
package rewrite

import (
	"github.com/tierflow/tierflow/planner/cardinality"
	"github.com/tierflow/tierflow/planner/logical"
)

// RuleID names a rule.
type RuleID string

// Rule is one rewrite.
type Rule struct {
	ID    RuleID
	Apply func(logical.Node) logical.Node
}

// Options are what the cost-based rules read.
type Options struct {
	// Stats gives tables' statistics (catalog.Catalog.StatsOf); nil: the
	// defaults (cardinality.DefaultRows rows, textbook selectivities).
	Stats cardinality.StatsFunc
}

// Rules are the default rules in the order Apply runs them, without
// statistics.
func Rules() []Rule { return RulesWith(Options{}) }

// RulesWith are the default rules in the order ApplyWith runs them: filters
// move below outer joins and projections, the joins are ordered (and filters pushed to the relations they read) before
// filters move below models and columns are pruned.
func RulesWith(o Options) []Rule {
	est := cardinality.New(o.Stats)
	return []Rule{
		{ID: PushFilterBelowJoinID, Apply: PushFilterBelowJoin},
		{ID: ReorderJoinsID, Apply: ReorderJoins(est)},
		{ID: BuildSideID, Apply: BuildSide(est)},
		{ID: PushFilterBelowModelID, Apply: PushFilterBelowModel},
		{ID: LiftModelArgsID, Apply: LiftModelArgs},
		{ID: PruneColumnsID, Apply: PruneColumns},
	}
}

// Apply runs the default rules over a plan, without statistics.
func Apply(p *logical.Plan) *logical.Plan { return ApplyWith(p, Options{}) }

// ApplyWith runs the default rules over a plan.
func ApplyWith(p *logical.Plan, o Options) *logical.Plan {
	root := p.Root
	for _, r := range RulesWith(o) {
		root = r.Apply(root)
	}
	if p.Objectives.LatencyMs > 0 {
		root = SplitCallsBySource(root)
	}
	root = optimizeSubqueries(root, o, map[logical.Node]logical.Node{})
	return &logical.Plan{Root: root, Objectives: p.Objectives}
}
