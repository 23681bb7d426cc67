package lang

import (
	"io"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"
)

// asciiLexer lexes a script that is all ASCII by hand, into the tokens
// regexLexer makes of it (the same types, values and positions), and hands
// any other script, or one it would refuse, to regexLexer itself. The rules
// are tried one regular expression after another at each token: Tokens of
// a 1.4 KB script (Nexmark's q5) took 0.36 ms, and a script is lexed twice
// per parse (Tokens, then the grammar), on the client, the coordinator and
// each worker before a query starts. By hand Tokens takes 32-37 µs
// (docs/benchmarks.md, "Each run's fixed time, traced").
type asciiLexer struct{ re *lexer.StatefulDefinition }

func (a asciiLexer) Symbols() map[string]lexer.TokenType { return a.re.Symbols() }

func (a asciiLexer) Lex(filename string, r io.Reader) (lexer.Lexer, error) {
	var b strings.Builder
	if _, err := io.Copy(&b, r); err != nil {
		return nil, err
	}
	return a.LexString(filename, b.String())
}

func (a asciiLexer) LexString(filename, src string) (lexer.Lexer, error) {
	if toks, ok := scanASCII(filename, src); ok {
		return &replay{toks: toks}, nil
	}
	return a.re.LexString(filename, src)
}

// replay hands out tokens lexed already, then EOF.
type replay struct {
	toks []lexer.Token
	i    int
}

func (r *replay) Next() (lexer.Token, error) {
	t := r.toks[r.i]
	if r.i < len(r.toks)-1 {
		r.i++
	}
	return t, nil
}

// The token types, by name and by type.
var (
	tokenTypes = regexLexer.Symbols()
	tokenNames = lexer.SymbolsByRune(regexLexer)
)

var (
	typComment    = tokenTypes[TokComment]
	typWhitespace = tokenTypes[TokWhitespace]
	typKeyword    = tokenTypes[TokKeyword]
	typIdent      = tokenTypes[TokIdent]
	typQuoted     = tokenTypes[TokQuoted]
	typFloat      = tokenTypes[TokFloat]
	typInt        = tokenTypes[TokInt]
	typString     = tokenTypes[TokString]
	typOperator   = tokenTypes[TokOperator]
)

// scanASCII is regexLexer's tokens of src, EOF last, when src is all ASCII
// and every token is one of the rules' complete forms; ok is false
// otherwise (a byte past ASCII, where the rules' case folding and word
// boundaries are Unicode's; an unterminated string, quoted name or comment;
// a character no rule takes), and regexLexer lexes src, errors and all.
// Each case below is its rule in regexLexer, tried in the same order.
func scanASCII(filename, src string) (toks []lexer.Token, ok bool) {
	for i := 0; i < len(src); i++ {
		if src[i] >= 0x80 {
			return nil, false
		}
	}
	pos := lexer.Position{Filename: filename, Line: 1, Column: 1}
	toks = make([]lexer.Token, 0, len(src)/3+1)
	for i := 0; i < len(src); {
		c := src[i]
		var typ lexer.TokenType
		n := 0
		switch {
		case c == '-' && at(src, i+1, '-'): // Comment: --[^\n]*
			n = strings.IndexByte(src[i:], '\n')
			if n < 0 {
				n = len(src) - i
			}
			typ = typComment
		case c == '/' && at(src, i+1, '*'): // Comment: /\*(?s:.*?)\*/
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, false // Unterminated
			}
			n, typ = end+4, typComment
		case isSpace(c): // Whitespace: [ \t\r\n\f]+
			for n = 1; i+n < len(src) && isSpace(src[i+n]); n++ {
			}
			typ = typWhitespace
		case isLetter(c) || c == '_': // Keyword: (?i:ALL|...)\b; Ident: [A-Za-z_][A-Za-z0-9_]*
			for n = 1; i+n < len(src) && isWord(src[i+n]); n++ {
			}
			typ = typIdent
			if reserved(src[i : i+n]) {
				typ = typKeyword
			}
		case c == '"': // QIdent: "(?:[^"]|"")*"
			if n = quoted(src[i:], '"'); n == 0 {
				return nil, false
			}
			typ = typQuoted
		case isDigit(c) || c == '.' && i+1 < len(src) && isDigit(src[i+1]):
			n, typ = number(src[i:])
		case c == '\'': // String: '(?:[^']|'')*'
			if n = quoted(src[i:], '\''); n == 0 {
				return nil, false
			}
			typ = typString
		default: // Operator: ::|//|<>|!=|<=|>=|\|\||[-+*/%=<>(),.;\[\]]
			if i+1 < len(src) {
				switch src[i : i+2] {
				case "::", "//", "<>", "!=", "<=", ">=", "||":
					n = 2
				}
			}
			if n == 0 && strings.IndexByte("-+*/%=<>(),.;[]", c) >= 0 {
				n = 1
			}
			if n == 0 {
				return nil, false
			}
			typ = typOperator
		}
		span := src[i : i+n]
		toks = append(toks, lexer.Token{Type: typ, Value: span, Pos: pos})
		pos.Advance(span)
		i += n
	}
	return append(toks, lexer.EOFToken(pos)), true
}

// reserved: word, of ASCII letters, digits and "_", is a reserved word in
// any case (reservedSet, without a copy in upper case on the heap).
func reserved(word string) bool {
	var up [16]byte
	if len(word) > len(up) {
		return false
	}
	for i := 0; i < len(word); i++ {
		c := word[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		up[i] = c
	}
	return reservedSet[string(up[:len(word)])]
}

// tokenName is the name of a token type (Token.Kind).
func tokenName(t lexer.TokenType) string {
	switch t {
	case typWhitespace:
		return TokWhitespace
	case typIdent:
		return TokIdent
	case typKeyword:
		return TokKeyword
	case typOperator:
		return TokOperator
	}
	return tokenNames[t]
}

// number is the length and type of the number at the start of s (a digit,
// or a "." before one): Float's alternatives in their order, then Int.
func number(s string) (int, lexer.TokenType) {
	digits := func(i int) int { // the end of the digits from i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		return i
	}
	exponent := func(i int) int { // past (?:[eE][+-]?[0-9]+) at i, or i
		if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
			j := i + 1
			if j < len(s) && (s[j] == '+' || s[j] == '-') {
				j++
			}
			if k := digits(j); k > j {
				return k
			}
		}
		return i
	}
	d := digits(0)
	switch {
	case d > 0 && d < len(s) && s[d] == '.': // [0-9]+\.[0-9]*
		return exponent(digits(d + 1)), typFloat
	case d == 0: // \.[0-9]+ (the caller saw the digit)
		return exponent(digits(1)), typFloat
	}
	if e := exponent(d); e > d { // [0-9]+[eE][+-]?[0-9]+
		return e, typFloat
	}
	return d, typInt
}

// quoted is the length of the string or quoted name at the start of s,
// opened by q, a doubled q inside it, or 0 when it does not close.
func quoted(s string, q byte) int {
	for i := 1; i < len(s); i++ {
		if s[i] == q {
			if i+1 < len(s) && s[i+1] == q {
				i++
				continue
			}
			return i + 1
		}
	}
	return 0
}

func at(s string, i int, c byte) bool { return i < len(s) && s[i] == c }
func isSpace(c byte) bool             { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' }
func isLetter(c byte) bool            { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool             { return c >= '0' && c <= '9' }
func isWord(c byte) bool              { return isLetter(c) || isDigit(c) || c == '_' }
