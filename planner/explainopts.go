package planner

import (
	"fmt"
	"strings"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
)

// ExplainOptions applies an EXPLAIN statement's options (FORMAT, STRATEGY,
// PROFILE, and the flag FRONTIER) over opts and format, except those changed says were set
// elsewhere (a command-line flag wins); errors name the option's position.
// The CLI, `tierflow run` and the REPL read EXPLAIN through it alike.
func ExplainOptions(e *lang.Explain, opts *Options, format *string, changed func(option string) bool) error {
	if changed == nil {
		changed = func(string) bool { return false }
	}
	for _, o := range e.Options {
		key := strings.ToUpper(string(o.Key))
		if key == "FRONTIER" {
			if o.Value != "" {
				return fmt.Errorf("%s: EXPLAIN option FRONTIER takes no value, got %s", bind.Pos(o.Pos), o.Value)
			}
			opts.Frontier = true
			continue
		}
		if o.Value == "" && (key == "FORMAT" || key == "STRATEGY" || key == "PROFILE") {
			return fmt.Errorf("%s: EXPLAIN option %s wants a value", bind.Pos(o.Pos), o.Key)
		}
		switch key {
		case "DURATION", "ROWS":
			if e.Analyze {
				// EXPLAIN ANALYZE's bounds of the run (cluster.ParseAnalyze):
				// nothing to plan by.
				continue
			}
			return fmt.Errorf("%s: EXPLAIN option %s bounds EXPLAIN ANALYZE's run: write EXPLAIN ANALYZE (%s ...)", bind.Pos(o.Pos), o.Key, o.Key)
		case "FORMAT":
			if !changed("format") {
				*format = strings.ToLower(o.Value)
			}
		case "STRATEGY":
			if !changed("strategy") {
				opts.Strategy = strings.ToLower(o.Value)
			}
		case "PROFILE":
			if !changed("profile") {
				p, err := ParsePercentile(o.Value)
				if err != nil {
					return fmt.Errorf("%s: %v", bind.Pos(o.Pos), err)
				}
				opts.Percentile = p
			}
		default:
			return fmt.Errorf("%s: unknown EXPLAIN option %s (want FORMAT, STRATEGY, PROFILE or FRONTIER)", bind.Pos(o.Pos), o.Key)
		}
	}
	return nil
}
