package cli

import (
	"errors"
	"fmt"

	"golang.org/x/term"
)

// Exit codes: every command and benchmark exits with one of these.
const (
	ExitOK       = 0
	ExitFailure  = 1 // the query or the system failed while running
	ExitBadInput = 2 // the input was wrong: query, config, flags, arguments
	// ExitInterrupted: stopped by Ctrl-C (or SIGTERM) after writing what
	// was complete; 128 + SIGINT, as shells report an interrupted command.
	ExitInterrupted = 130
)

// BadInputError marks an error as the user's input being wrong (exit 2).
type BadInputError struct{ Err error }

func (e BadInputError) Error() string { return e.Err.Error() }
func (e BadInputError) Unwrap() error { return e.Err }

// BadInput wraps err so that the command exits with ExitBadInput.
func BadInput(err error) error {
	if err == nil {
		return nil
	}
	return BadInputError{err}
}

// SilentExit carries an exit code for a command that already printed its
// errors.
type SilentExit struct{ Code int }

func (e SilentExit) Error() string { return fmt.Sprintf("exit %d", e.Code) }

// ExitCode is the code a command that returned err exits with.
func ExitCode(err error) int {
	var se SilentExit
	var bi BadInputError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &se):
		return se.Code
	case errors.As(err, &bi):
		return ExitBadInput
	default:
		return ExitFailure
	}
}

// IsTerminal reports whether v is a file on a terminal.
func IsTerminal(v any) bool {
	f, ok := v.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}
