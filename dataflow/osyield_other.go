//go:build !linux

package dataflow

// osYield: off Linux the step gives only its processor away
// (runtime.Gosched in letOthersRun).
func osYield() {}
