package dataflow

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// An error that quotes a value of megabytes is cut to MaxErrorText: its
// beginning and end kept, how much was left out said, characters whole,
// and errors.Is and As still finding what it wraps; one that fits is
// itself.
func TestBoundErrorKeepsItsEndsAndItsChain(t *testing.T) {
	var le *LimitError
	cause := fmt.Errorf("%w: parsing %q: invalid syntax", &LimitError{Holder: "cast"}, strings.Repeat("é", 5<<20))
	err := BoundError(fmt.Errorf("project[0] batch: %w", cause))
	text := err.Error()
	if len(text) > MaxErrorText {
		t.Errorf("%d bytes, want at most %d", len(text), MaxErrorText)
	}
	if !strings.HasPrefix(text, "project[0] batch: cast holds") || !strings.HasSuffix(text, `é": invalid syntax`) {
		t.Errorf("lost its ends: %.80q ... %.80q", text, text[len(text)-80:])
	}
	if !strings.Contains(text, "bytes left out") || !utf8.ValidString(text) {
		t.Errorf("does not say what it left out, or cut a character: %q", text[3000:3400])
	}
	if !errors.Is(err, ErrMemory) || !errors.As(err, &le) {
		t.Errorf("the bounded error no longer wraps its cause")
	}
	if got := BoundText(strings.Repeat("é", 100), 10); !utf8.ValidString(got) || !strings.Contains(got, "left out") {
		t.Errorf("a bound shorter than the note: %q", got)
	}
	short := errors.New("short")
	if BoundError(short) != short || BoundError(nil) != nil {
		t.Errorf("an error that fits is changed")
	}
}
