package rel

import (
	"fmt"
	"testing"
)

// A changelog leaves the rows put in and not taken out; taking out a row
// the table does not hold, or an unknown op, is an error.
func TestApplyChangelog(t *testing.T) {
	rows, err := ApplyChangelog([][]any{
		{OpInsert, "a", 1}, {OpInsert, "b", 2},
		{OpUpdateBefore, "a", 1}, {OpUpdateAfter, "a", 3},
		{OpInsert, "c", 4}, {OpDelete, "c", 4},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(rows); got != "[[b 2] [a 3]]" {
		t.Errorf("left %s, want [[b 2] [a 3]]", got)
	}
	for _, bad := range [][][]any{{{OpDelete, "a", 1}}, {{OpInsert, "a"}, {OpUpdateBefore, "b"}}, {{"*", "a"}}, {{}}} {
		if _, err := ApplyChangelog(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}
