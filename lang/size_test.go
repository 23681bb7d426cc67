package lang

import (
	"errors"
	"strings"
	"testing"
)

// A script past MaxTokens is refused at the first token past the limit,
// with its file:line:col, before the parser sees any of it: a flat
// 150,000-term a+a+... (300 KB, under the 1 MiB script cap) took minutes.
func TestScriptPastMaxTokensIsRefusedWhereItPassesIt(t *testing.T) {
	src := "SELECT\n  " + strings.Repeat("a+", 150_000) + "a FROM t;\n"
	_, err := Parse("big.sql", src)
	var pe *Error
	if !errors.As(err, &pe) || !errors.Is(err, ErrSyntax) {
		t.Fatalf("got %v, want a syntax error", err)
	}
	// SELECT is token 1; the expression's k-th token is token k+1, at
	// column 3+(k-1) of line 2 (one character a token).
	k := MaxTokens // token MaxTokens+1 of the script
	if pe.Pos.Filename != "big.sql" || pe.Pos.Line != 2 || pe.Pos.Column != 3+k-1 {
		t.Errorf("error at %s, want big.sql:2:%d", pe.Pos, 3+k-1)
	}
	if !strings.Contains(err.Error(), "more than 65536 tokens") {
		t.Errorf("error %q does not name the limit", err)
	}
}

// The limit counts tokens, not whitespace or comments, and lets exactly
// limit through.
func TestTokenLimitCountsTokensOnly(t *testing.T) {
	src := "SELECT /* many words here */ a ,\n b -- and more\n FROM t"
	if _, err := tokens("s.sql", src, 6); err != nil {
		t.Fatalf("6 tokens within a limit of 6: %v", err)
	}
	_, err := tokens("s.sql", src, 5)
	var pe *Error
	if !errors.As(err, &pe) || pe.Pos.Line != 3 || pe.Pos.Column != 7 {
		t.Fatalf("got %v, want an error at t (s.sql:3:7)", err)
	}
}
