package recovery

import (
	"testing"
)

func TestBenchRecoveryBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--rounds", "0"}, {"--kills", "3"}, {"--placement", "random"}, {"--rate", "-1"}} {
		code, _, errs := runCLI(t, "", append([]string{"bench", "recovery"}, args...)...)
		if code != exitBadInput {
			t.Errorf("%v: exit %d (%s), want %d", args, code, errs, exitBadInput)
		}
	}
}
