//go:build !linux

package dataflow

func setThreadNice(int) bool { return false }

func threadNice() (int, bool) { return 0, false }
