package rel

import (
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
