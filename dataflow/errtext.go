package dataflow

import (
	"fmt"
	"unicode/utf8"
)

// MaxErrorText bounds the text of an error the engine passes on: to a
// log line, a worker's status message, a client. An error may quote a
// value, and values are whoever wrote them: CAST of a 10 MB string quoted
// it whole, and the worker's report of the failure, one NATS message past
// the server's payload limit, never reached the coordinator (the query
// stayed running and its client waited). 4 KiB keeps every position,
// name and reason whole; what it cuts is a quoted value's middle.
const MaxErrorText = 4 << 10

// BoundError is err with its text within MaxErrorText (errors.Is and As
// still see err); err itself when it fits.
func BoundError(err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	if len(text) <= MaxErrorText {
		return err
	}
	return &boundedError{err: err, text: BoundText(text, MaxErrorText)}
}

type boundedError struct {
	err  error
	text string
}

func (e *boundedError) Error() string { return e.text }
func (e *boundedError) Unwrap() error { return e.err }

// BoundText is s within limit bytes: its beginning (where an error says
// what failed) and its end (the innermost cause's last words), with how
// many bytes were left out between them, cut at character boundaries.
func BoundText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	tail := limit / 8
	head := max(limit-tail-64, 0) // room for the note
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	from := max(len(s)-tail, head)
	for from < len(s) && !utf8.RuneStart(s[from]) {
		from++
	}
	return fmt.Sprintf("%s … (%d bytes left out) … %s", s[:head], from-head, s[from:])
}
