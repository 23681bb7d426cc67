package coordinator

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/tierflow/tierflow/runtime/deploy"
)

// quoted is a Go-quoted string in an error message (%q), the form in which
// the catalog's and the sources' errors quote what they read.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// scrubbed is an error whose message no longer quotes what the submitter
// did not write; it keeps the error's kind (errors.Is, deploy.KindOf).
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// scrub keeps a submission's error from quoting the contents of a file the
// coordinator or a worker read for it: a quoted string that is not part of
// the submitted script (a name, a path, a literal the client wrote) is
// replaced by "…". A catalog YAML or a CSV file named by a query may be
// anyone's file (a key, a password file) that the query's owner may not
// read; its content must reach neither the reply, the log nor SHOW QUERIES.
// The message keeps its positions (file:line:col) and its reason.
func scrub(err error, script deploy.Script) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	out := quoted.ReplaceAllStringFunc(msg, func(q string) string {
		s, uerr := strconv.Unquote(q)
		if uerr != nil {
			s = q[1 : len(q)-1]
		}
		if s == "" || strings.Contains(script.Source, s) || s == script.Filename || s == script.Catalog {
			return q
		}
		return `"…"`
	})
	if out == msg {
		return err
	}
	return &scrubbed{msg: out, err: err}
}
