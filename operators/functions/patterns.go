package functions

import (
	"fmt"
	"regexp"

	"github.com/tierflow/tierflow/dataflow"
)

// A regular expression compiled by Go's regexp costs about 150 bytes of Go
// memory per byte of its text (a 3 MB pattern took a run to 500 MB), none
// of it charged to the query: the pattern is a value, and values are
// whoever wrote them.
//
// MaxPatternBytes bounds the text of one pattern (LIKE's, a regexp
// function's): at 64 KiB a compiled pattern is about 10 MB, within what
// RE2's default memory for one program (8 MB, DuckDB's) would compile.
const MaxPatternBytes = 64 << 10

// CheckPattern refuses a pattern past MaxPatternBytes, for fn.
func CheckPattern(fn, pattern string) error {
	if len(pattern) > MaxPatternBytes {
		return fmt.Errorf("%w: %s: a pattern of %s, more than %s", ErrBadArgument, fn, dataflow.Bytes(int64(len(pattern))), dataflow.Bytes(MaxPatternBytes))
	}
	return nil
}

// PatternCache keeps the compiled patterns of a call (or of a LIKE) by
// their text, for the few a pattern column repeats. It holds at most
// PatternCacheBytes of pattern text and PatternCacheEntries patterns, and
// starts over past either: a column of distinct patterns gains nothing from
// a cache, and kept every one (4,096 distinct 20 KB patterns in one batch:
// 6.5 GB).
type PatternCache struct {
	m     map[string]*regexp.Regexp
	bytes int
}

const (
	PatternCacheBytes   = 4 * MaxPatternBytes // about 40 MB compiled
	PatternCacheEntries = 1024
)

// Held is what the cache holds: patterns and bytes of their text.
func (c *PatternCache) Held() (patterns, bytes int) { return len(c.m), c.bytes }

// Get is the pattern compiled under key, or nil.
func (c *PatternCache) Get(key string) *regexp.Regexp { return c.m[key] }

// Put keeps re under key, first forgetting every pattern when it would
// pass the cache's bounds.
func (c *PatternCache) Put(key string, re *regexp.Regexp) {
	if c.m == nil || len(c.m) >= PatternCacheEntries || c.bytes+len(key) > PatternCacheBytes {
		c.m, c.bytes = map[string]*regexp.Regexp{}, 0
	}
	c.m[key] = re
	c.bytes += len(key)
}
