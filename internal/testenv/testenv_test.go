package testenv

import "testing"

func TestLongFollowsTheEnvironment(t *testing.T) {
	t.Setenv(LongEnv, "")
	if IsLong() {
		t.Fatal("IsLong with the variable unset")
	}
	t.Setenv(LongEnv, "1")
	if !IsLong() {
		t.Fatal("not IsLong with the variable set to 1")
	}
	ran := false
	t.Run("long", func(t *testing.T) {
		Long(t, "checks Long itself")
		ran = true
	})
	if !ran {
		t.Fatal("Long skipped a test with the variable set")
	}
}
