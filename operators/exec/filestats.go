package exec

import (
	"os"
	"sync"
	"time"

	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/catalog"
)

// FileStats is the catalog's statistics source (catalog.StatsSource) over
// the files tables read: a Parquet file's footer and a sample of the
// columns asked about (sources.ParquetStats). Other formats have none (the
// planner's defaults apply). A relative path resolves as FileSchemas
// resolves it.
//
// What it computed is kept for the life of the process, per file path (for
// the file's size and modification time: a file rewritten replaces its
// entry, which a key of all three kept beside the new one, once per rewrite
// of a file a query writes and another reads), so that the queries of one
// session read a table's footer and samples once.
type FileStats struct {
	BaseDir string
}

type statsKey struct {
	size  int64
	mtime time.Time
}

type statsEntry struct {
	key   statsKey
	stats *catalog.TableStats
}

var fileStatsCache struct {
	sync.Mutex
	m map[string]statsEntry
}

// TableStats implements catalog.StatsSource.
func (f FileStats) TableStats(path, format, declaredIn string, distinct []string) (*catalog.TableStats, error) {
	p := ResolvePath(path, f.BaseDir, declaredIn)
	if sources.FormatOf(format, p) != "parquet" {
		return nil, nil
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	key := statsKey{fi.Size(), fi.ModTime()}
	c := &fileStatsCache
	c.Lock()
	defer c.Unlock()
	if c.m == nil {
		c.m = map[string]statsEntry{}
	}
	var st *catalog.TableStats
	if e, ok := c.m[p]; ok && e.key == key {
		st = e.stats
	}
	var missing []string
	for _, name := range distinct {
		if cs := st.Column(name); st == nil || (cs != nil && cs.Distinct == 0) {
			missing = append(missing, name)
		}
	}
	if st != nil && len(missing) == 0 {
		return copyStats(st), nil
	}
	fresh, err := sources.ParquetStats(p, missing)
	if err != nil {
		return nil, err
	}
	if st == nil {
		st = fresh
		c.m[p] = statsEntry{key, st}
	} else {
		for _, name := range missing {
			if cs, ok := fresh.Columns[name]; ok && st.Columns[name] != nil {
				st.Columns[name].Distinct = cs.Distinct
			}
		}
	}
	return copyStats(st), nil
}

// copyStats gives the caller its own copy: the cached one grows.
func copyStats(st *catalog.TableStats) *catalog.TableStats {
	out := &catalog.TableStats{Rows: st.Rows, Columns: make(map[string]*catalog.ColumnStats, len(st.Columns))}
	for k, v := range st.Columns {
		c := *v
		out.Columns[k] = &c
	}
	return out
}
