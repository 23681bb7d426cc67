package nexmark

import "fmt"

// FirstDifference says where two runs' sorted result lines first differ,
// for a test's failure message ("" when they are the same).
func FirstDifference(got, want []string) string {
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("first difference at %d: %q, want %q", i, g, w)
		}
	}
	return ""
}
