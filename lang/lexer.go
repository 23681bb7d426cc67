package lang

import (
	"fmt"
	"sort"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"
)

// reservedWords cannot be bare identifiers: each of them may follow an optional
// name (an alias, an implicit AS) or start a statement, so letting it be a name
// would make the grammar ambiguous.
var reservedWords = []string{
	"ALL", "AND", "AS", "ASC", "BETWEEN", "BY", "CASE", "CAST", "CREATE", "CROSS",
	"DESC", "DESCRIBE", "DISTINCT", "DROP", "ELSE", "END", "EXPLAIN", "FALSE",
	"FROM", "FULL", "GROUP", "HAVING", "ILIKE", "IN", "INNER", "INSERT", "INTERVAL", "INTO", "IS",
	"JOIN", "LATERAL", "LEFT", "LIKE", "LIMIT", "NOT", "NULL", "OFFSET", "ON", "OR", "ORDER",
	"OUTER", "RIGHT", "SELECT", "SET", "SHOW", "THEN", "TRUE", "UNION", "WHEN", "WHERE", "WITH",
}

// contextualWords are keywords only where the grammar asks for them; elsewhere
// they are ordinary identifiers (a column may be called "text" or "rate").
var contextualWords = []string{
	"ACCURACY", "ANALYZE", "ARROW", "AT", "AWARE", "BEST_EFFORT", "BIGINT", "BLOB", "BOOL",
	"BOOLEAN", "BUDGET", "BYTES", "CSV", "DATA", "DATE", "DAY", "DAYS", "DECIMAL", "DOUBLE", "EXISTS", "EXTRACT", "FILE",
	"FILTER", "FIRST", "FLOAT", "FORMAT", "FUNCTIONS", "HOP", "HOUR", "HOURS", "IF", "INPUTS", "INT",
	"INTEGER", "JETSTREAM", "JSON", "LAST", "LATENCY", "LOCATIONS", "MILLISECOND",
	"MILLISECONDS", "MINUTE", "MINUTES", "MODEL", "MODELS", "MONTH", "MONTHS", "MS", "NATS", "NULLS", "NUMERIC", "OUTPUTS",
	"PARQUET", "PER", "PERCENTILE", "POSITION", "PRIORITY", "QUERIES", "QUERY", "RATE", "REAL",
	"REALTIME", "SECOND", "SECONDS", "SESSION", "SINK", "SINKS", "STDOUT", "STOP",
	"DISCARD",
	"STREAM", "STREAMS", "STRING", "STRATEGY", "SUBSTRING", "TABLE", "TABLES", "TASK", "TENSOR",
	"TEXT", "THROUGHPUT", "TIER", "TIERS", "TIMESTAMP", "TO", "TRY_CAST", "TUMBLE", "VARCHAR",
	"VARIANTS", "VIEW", "WEEK", "WEEKS", "WITHIN", "WORKERS", "YEAR", "YEARS",
	// window functions: OVER (PARTITION BY ... ORDER BY ... frame)
	"CURRENT", "FOLLOWING", "OVER", "PARTITION", "PRECEDING", "RANGE", "ROW", "ROWS", "UNBOUNDED", "WINDOW",
}

var reservedSet = func() map[string]bool {
	m := make(map[string]bool, len(reservedWords))
	for _, w := range reservedWords {
		m[w] = true
	}
	return m
}()

// Token types of the lexer, by name; Tokens reports them in Token.Kind.
const (
	TokKeyword    = "Keyword"    // a reserved word, any case
	TokIdent      = "Ident"      // a bare identifier or contextual keyword
	TokQuoted     = "QIdent"     // a double-quoted identifier, quotes included
	TokFloat      = "Float"      // 1.5, .5, 1e3
	TokInt        = "Int"        // 42
	TokString     = "String"     // 'text', quotes included
	TokOperator   = "Operator"   // punctuation and operators
	TokComment    = "Comment"    // -- line or /* block */
	TokWhitespace = "Whitespace" // spaces, tabs, newlines
)

// regexLexer is the language's lexer as rules, in the order they are tried
// at each token (the first that matches wins). It is the definition:
// sqlLexer reads the common script, all ASCII, by hand (scanASCII) and
// hands the rest to it.
var regexLexer = lexer.MustSimple([]lexer.SimpleRule{
	{Name: TokComment, Pattern: `--[^\n]*|/\*(?s:.*?)\*/`},
	// Only reached when the comment above did not close; Tokens reports it.
	{Name: "Unterminated", Pattern: `/\*(?s:.*)`},
	{Name: TokWhitespace, Pattern: `[ \t\r\n\f]+`},
	{Name: TokKeyword, Pattern: `(?i:` + strings.Join(reservedWords, "|") + `)\b`},
	{Name: TokIdent, Pattern: `[A-Za-z_][A-Za-z0-9_]*`},
	{Name: TokQuoted, Pattern: `"(?:[^"]|"")*"`},
	{Name: TokFloat, Pattern: `(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+`},
	{Name: TokInt, Pattern: `[0-9]+`},
	{Name: TokString, Pattern: `'(?:[^']|'')*'`},
	{Name: TokOperator, Pattern: `::|//|<>|!=|<=|>=|\|\||[-+*/%=<>(),.;\[\]]`},
})

// sqlLexer is the lexer the parsers and Tokens use.
var sqlLexer = asciiLexer{regexLexer}

// Keyword describes one keyword of the language.
type Keyword struct {
	Word     string // upper case
	Reserved bool   // reserved words need quotes to be used as names
}

// Keywords returns every keyword of the language, sorted, upper case (for
// completion and highlighting).
func Keywords() []string {
	out := make([]string, 0, len(reservedWords)+len(contextualWords))
	out = append(out, reservedWords...)
	out = append(out, contextualWords...)
	sort.Strings(out)
	return out
}

// KeywordInfo is Keywords with the reserved flag.
func KeywordInfo() []Keyword {
	var out []Keyword
	for _, w := range Keywords() {
		out = append(out, Keyword{Word: w, Reserved: reservedSet[w]})
	}
	return out
}

// IsReserved reports whether word (any case) is a reserved word.
func IsReserved(word string) bool { return reservedSet[strings.ToUpper(word)] }

// Token is one lexed token with its position; comments and whitespace included,
// so a REPL can highlight and complete over the exact source.
type Token struct {
	Kind  string // one of the Tok* names
	Value string // the source text of the token
	Pos   lexer.Position
}

// Tokens lexes src. On a lexing error (an unterminated string, a stray
// character) it returns the tokens before it and a *Error wrapping ErrSyntax.
func Tokens(filename, src string) ([]Token, error) { return tokens(filename, src, 0) }

// tokens is Tokens, failing at the first token (not counting whitespace
// and comments) past limit when limit > 0: a script over MaxTokens is
// refused before the rest of it is even read.
func tokens(filename, src string, limit int) ([]Token, error) {
	l, err := sqlLexer.LexString(filename, src)
	if err != nil {
		return nil, lexError(filename, src, err)
	}
	var out []Token
	if r, ok := l.(*replay); ok {
		out = make([]Token, 0, len(r.toks))
	}
	n := 0 // tokens counted against limit
	for {
		t, err := l.Next()
		if err != nil {
			return out, lexError(filename, src, err)
		}
		if t.EOF() {
			return out, nil
		}
		kind := tokenName(t.Type)
		if kind == "Unterminated" {
			return out, newError(src, t.Pos, "unterminated comment (a block comment ends with */)")
		}
		if limit > 0 && kind != TokWhitespace && kind != TokComment {
			if n++; n > limit {
				return out, newError(src, t.Pos, fmt.Sprintf("script too large: more than %d tokens, the parser's limit: split the script, or read a long list of values from a table", limit))
			}
		}
		out = append(out, Token{Kind: kind, Value: t.Value, Pos: t.Pos})
	}
}

// IsComplete reports whether src ends a statement: its last token outside
// comments is a ";" and no string, quoted name or block comment is left open.
// A REPL reads lines until IsComplete.
func IsComplete(src string) bool {
	toks, err := Tokens("", src)
	if err != nil {
		return false
	}
	for i := len(toks) - 1; i >= 0; i-- {
		switch toks[i].Kind {
		case TokComment, TokWhitespace:
			continue
		}
		return toks[i].Kind == TokOperator && toks[i].Value == ";"
	}
	return false
}
