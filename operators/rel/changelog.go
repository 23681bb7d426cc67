package rel

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
)

// An updating result (Flink's changelog) is a stream whose rows are changes
// to a table rather than new rows: each carries, in its last column, one of
// the ops below. The column is marked by field metadata, not by its name, so
// a user's own column called op is never mistaken for it.
const (
	OpInsert       = "+I" // a row the table did not have
	OpUpdateBefore = "-U" // a row an update takes out (its +U follows)
	OpUpdateAfter  = "+U" // the row an update puts in
	OpDelete       = "-D" // a row taken out for good
)

// changelogKey marks the op column in its field's metadata.
const changelogKey = "tierflow.changelog"

// OpField is the op column of an updating result.
func OpField() arrow.Field {
	return arrow.Field{Name: "op", Type: arrow.BinaryTypes.String,
		Metadata: arrow.NewMetadata([]string{changelogKey}, []string{"op"})}
}

// IsChangelog reports whether rows of s are an updating result: its last
// column is the op column.
func IsChangelog(s *arrow.Schema) bool {
	if s == nil || s.NumFields() == 0 {
		return false
	}
	f := s.Field(s.NumFields() - 1)
	return f.Metadata.FindKey(changelogKey) >= 0
}

// ApplyChangelog is the table a changelog leaves, as a sink prints it: each
// row its op first, then its columns. It returns the rows left (without
// their op), in the order they were put in; a retraction of a row the
// table does not hold, or an op that is none of the four, is an error.
func ApplyChangelog(log [][]any) ([][]any, error) {
	held := map[string]int{}
	for i, r := range log {
		if len(r) == 0 {
			return nil, fmt.Errorf("changelog row %d: empty", i)
		}
		k := fmt.Sprint(r[1:]...)
		switch r[0] {
		case OpInsert, OpUpdateAfter:
			held[k]++
		case OpUpdateBefore, OpDelete:
			if held[k] == 0 {
				return nil, fmt.Errorf("changelog row %d: %v of a row the table does not hold: %v", i, r[0], r[1:])
			}
			held[k]--
		default:
			return nil, fmt.Errorf("changelog row %d: op %v is none of +I, -U, +U, -D", i, r[0])
		}
	}
	var out [][]any
	for _, r := range log {
		if k := fmt.Sprint(r[1:]...); held[k] > 0 && (r[0] == OpInsert || r[0] == OpUpdateAfter) {
			held[k]--
			out = append(out, r[1:])
		}
	}
	return out, nil
}
