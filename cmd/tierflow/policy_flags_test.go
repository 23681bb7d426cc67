package main

import (
	"strings"
	"testing"
)

// TestPolicyFlags: the SneakPeek re-plan policy needs the evidence it
// weighs rows by, and --policy takes only registered names; either is
// refused as bad input, saying what is missing or which names there are.
func TestPolicyFlags(t *testing.T) {
	code, _, errs := runCLI(t, "", "run", "--replan-data-aware", "../../examples/streaming/query.sql")
	if code != exitBadInput || !strings.Contains(errs, "--evidence") {
		t.Errorf("--replan-data-aware without --evidence: exit %d, stderr %q; want exit 2 naming --evidence", code, errs)
	}
	code, _, errs = runCLI(t, "", "run", "--policy", "no-such", "../../examples/streaming/query.sql")
	if code != exitBadInput || !strings.Contains(errs, `"no-such"`) || !strings.Contains(errs, "drift") {
		t.Errorf("--policy no-such: exit %d, stderr %q; want exit 2 naming it and the registered ones", code, errs)
	}
}
