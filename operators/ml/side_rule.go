package ml

import (
	"time"

	"github.com/tierflow/tierflow/dataflow"
)

// SideRule is the adapt step's per-batch side rule alone (the chooser
// WithSides installs), for a caller that drives it on a clock of its own:
// bench slo's simulated judge replays a trace through the very rule the
// engine runs, in virtual time, so that a change to the rule is judged on
// many traces in seconds and without the host's load in the numbers.
type SideRule struct{ c *sideChooser }

// NewSideRule is the rule over sides (descending) for rows of planes
// values a pixel, width bytes a value, a latency SLO of slo met with
// probability attain (0: dataflow.DefaultAttainment), of which the
// model's profiled compute takes compute.
func NewSideRule(sides []int, planes, width int, slo, compute time.Duration, attain float64) *SideRule {
	c := newSideChooser(sides, planes, width, slo, compute)
	if attain > 0 && attain < 1 {
		c.attain = attain
	}
	return &SideRule{c: c}
}

// Decide is the side of a batch of rows stamped ingest (Unix ns), decided
// at now, whose output crosses links; 0 drops the batch.
func (r *SideRule) Decide(now, ingest int64, links []dataflow.LinkState, rows int64) int {
	return r.c.decide(now, ingest, links, rows)
}

// Sent records a batch sent at side: its rows and its image bytes (the
// link's other bytes being its framing).
func (r *SideRule) Sent(side int, rows, payload int64) { r.c.sent(side, rows, payload) }

// Lagged records the rule's own time from a choice to the batch's
// hand-off to the link.
func (r *SideRule) Lagged(d time.Duration) { r.c.lagged(d) }
