package main

import (
	"strings"
	"testing"
)

// TestReplanDriftFlag: a drift factor of 1 or less would re-plan on any
// noise; it is refused as bad input, naming the flag.
func TestReplanDriftFlag(t *testing.T) {
	for _, v := range []string{"1", "0.5", "-2"} {
		code, _, errs := runCLI(t, "", "run", "--replan", "--replan-drift", v, "../../examples/streaming/query.sql")
		if code != exitBadInput || !strings.Contains(errs, "--replan-drift") {
			t.Errorf("--replan-drift %s: exit %d, stderr %q; want exit 2 naming --replan-drift", v, code, errs)
		}
	}
}
