package catalog

// Statistics of a table, as the planner's cost-based rules read them (the
// join order, above all). The planner runs nothing, so whoever builds the
// catalog next to the files supplies them (operators/exec reads them from a
// Parquet file's footer and a sample of its rows); tests inject their own.
// Absent statistics are never an error: the planner then falls back to the
// textbook defaults of planner/logical.Selectivity.

// TableStats are a table's row count and what is known of its columns.
type TableStats struct {
	// Rows is the number of rows (exact from a Parquet footer; estimated
	// for other formats).
	Rows float64
	// Columns by name; a column that is absent has no statistics.
	Columns map[string]*ColumnStats
}

// ColumnStats describe one column.
type ColumnStats struct {
	// Distinct is the estimated number of distinct non-NULL values (0:
	// unknown).
	Distinct float64
	// Nulls is the number of NULLs (exact from a footer).
	Nulls float64
	// Min and Max bound the non-NULL values when HasRange: int64, float64,
	// string or time.Time, the same Go types expr.Literal holds.
	Min, Max any
	HasRange bool
}

// Column returns the statistics of column name, or nil.
func (t *TableStats) Column(name string) *ColumnStats {
	if t == nil {
		return nil
	}
	return t.Columns[name]
}

// StatsSource gives the statistics of a table's file: what its metadata says
// of every column (row count, NULLs, min and max), and distinct counts for
// the columns named in distinct, which cost a read of some of their values.
// A source may leave out what it cannot compute. declaredIn is the file that
// named path, for resolving a relative path, as in FileSchemas.
type StatsSource interface {
	TableStats(path, format, declaredIn string, distinct []string) (*TableStats, error)
}

// StatsOf returns the statistics of table t with distinct counts for the
// columns named in distinct, or nil when the catalog has no source or the
// source has nothing for it.
func (c *Catalog) StatsOf(t *Table, distinct []string) *TableStats {
	if c == nil || c.Stats == nil || t == nil {
		return nil
	}
	st, err := c.Stats.TableStats(t.Path, t.Format, t.Pos.File, distinct)
	if err != nil {
		return nil
	}
	return st
}
