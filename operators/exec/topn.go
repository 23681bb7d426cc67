package exec

import (
	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/operators/rel"
	"github.com/tierflow/tierflow/planner/logical"
)

// topN builds the Sort under a Limit (ORDER BY ... LIMIT) as a rel.TopN,
// which keeps the best rows as they arrive instead of sorting them all. Over
// a windowed aggregation it is each window's top (per epoch), as the Sort it
// replaces is; elsewhere the whole input's. The Limit stays above it (a
// no-op on the top rows, but the graph keeps one operator per plan node, as
// the cluster's placement expects).
func (b *builder) topN(n *logical.Limit, s *logical.Sort, at func(error) error) (int, *arrow.Schema, error) {
	in, schema, err := b.node(s.Input)
	if err != nil {
		return 0, nil, err
	}
	keys := make([]rel.SortKey, len(s.Keys))
	for i, k := range s.Keys {
		keys[i] = rel.SortKey{Expr: k.Expr, Desc: k.Desc}
	}
	newTopN := b.topNAtEnd
	if windowed(s.Input) {
		newTopN = rel.NewTopN
	}
	fns := b.opts.Functions
	// With OFFSET the Limit above skips the first rows of the top N+OFFSET;
	// without LIMIT every row is wanted, which is the sort.
	top := n.N
	if n.Offset > 0 && top != logical.NoLimit {
		top += n.Offset
	}
	if top == logical.NoLimit {
		newSort := b.sortAtEnd
		if windowed(s.Input) {
			newSort = rel.NewSort
		}
		if _, err := newSort(keys, schema, fns); err != nil {
			return 0, nil, at(err)
		}
		op := b.add("sort", 1, func() (dataflow.Operator, error) { return newSort(keys, schema, fns) })
		b.g.Connect(in, 0, op, 0)
		return op, schema, nil
	}
	if _, err := newTopN(top, keys, schema, fns); err != nil {
		return 0, nil, at(err)
	}
	op := b.add("sort (top n)", 1, func() (dataflow.Operator, error) { return newTopN(top, keys, schema, fns) })
	b.g.Connect(in, 0, op, 0)
	return op, schema, nil
}

// sortAtEnd is rel.NewSortAtEnd that sorts in runs on disk past
// Options.MemoryLimit, or with its query's budget a third full
// (rel.NewSortAtEndWithin).
func (b *builder) sortAtEnd(keys []rel.SortKey, in *arrow.Schema, fns *functions.Registry) (*rel.Sort, error) {
	return rel.NewSortAtEndWithin(keys, in, fns, b.opts.MemoryLimit, b.q.sorts)
}

// topNAtEnd is rel.NewTopNAtEnd that hands its rows to a sort in runs on
// disk when n of them pass Options.MemoryLimit's half, or its query's
// budget is a third full (rel.NewTopNAtEndWithin).
func (b *builder) topNAtEnd(n int64, keys []rel.SortKey, in *arrow.Schema, fns *functions.Registry) (*rel.TopN, error) {
	return rel.NewTopNAtEndWithin(n, keys, in, fns, b.opts.MemoryLimit, b.q.sorts)
}
