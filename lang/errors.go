package lang

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// ErrSyntax is the kind of every error Parse returns; test with errors.Is.
var ErrSyntax = errors.New("syntax error")

// Error is a syntax error at a position in a named source.
type Error struct {
	Pos  lexer.Position // where the offending token starts
	Msg  string         // what was found and what was expected
	Line string         // the source line of Pos, for Pretty
}

// Error renders FILE:LINE:COL: message.
func (e *Error) Error() string {
	loc := fmt.Sprintf("%d:%d", e.Pos.Line, e.Pos.Column)
	if e.Pos.Filename != "" {
		loc = e.Pos.Filename + ":" + loc
	}
	return loc + ": " + e.Msg
}

// Unwrap makes errors.Is(err, ErrSyntax) true.
func (e *Error) Unwrap() error { return ErrSyntax }

// Message is the message without the position.
func (e *Error) Message() string { return e.Msg }

// Position is where the error is.
func (e *Error) Position() lexer.Position { return e.Pos }

// Pretty renders the error, then the offending source line and a caret under
// the column, the way a compiler does:
//
//	q.sql:1:10: unexpected "FORM", expected "FROM"
//	SELECT a FORM t
//	         ^
func (e *Error) Pretty() string {
	return e.Error() + "\n" + Caret(e.Line, e.Pos.Column)
}

// caretWidth is how many characters of a source line Caret shows on each
// side of the column: a script on one long line (a generated VALUES list, a
// minified query) would otherwise print all of it, megabytes, for one caret.
const caretWidth = 60

// Caret renders a source line and a caret under its column (1-based, in
// characters), the way a compiler does. A line longer than a terminal shows
// caretWidth characters on each side of the column, an ellipsis where it is
// cut.
func Caret(line string, col int) string {
	line = strings.TrimRight(line, "\r")
	rs := []rune(line)
	at := min(max(col-1, 0), len(rs))
	from, to := 0, len(rs)
	if len(rs) > 2*caretWidth {
		from, to = max(at-caretWidth, 0), min(at+caretWidth, len(rs))
	}
	var b strings.Builder
	if from > 0 {
		b.WriteString("…")
	}
	b.WriteString(string(rs[from:to]))
	if to < len(rs) {
		b.WriteString("…")
	}
	b.WriteByte('\n')
	if from > 0 {
		b.WriteByte(' ')
	}
	// Keep tabs so the caret lines up however the terminal expands them.
	for _, r := range rs[from:at] {
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
	}
	b.WriteString("^")
	return b.String()
}

func newError(src string, pos lexer.Position, msg string) *Error {
	if pos.Line < 1 {
		pos.Line, pos.Column = 1, 1
	}
	if pos.Column < 1 {
		pos.Column = 1
	}
	lines := strings.Split(src, "\n")
	line := ""
	if pos.Line <= len(lines) {
		line = strings.TrimRight(lines[pos.Line-1], "\r")
	}
	return &Error{Pos: pos, Msg: msg, Line: line}
}

// lexError turns a lexer failure into an Error that says what is unterminated.
func lexError(filename, src string, err error) error {
	var pe participle.Error
	if !errors.As(err, &pe) {
		return newError(src, lexer.Position{Filename: filename, Line: 1, Column: 1}, err.Error())
	}
	pos := pe.Position()
	rest := ""
	if pos.Offset >= 0 && pos.Offset < len(src) {
		rest = src[pos.Offset:]
	}
	var msg string
	switch {
	case strings.HasPrefix(rest, "'"):
		msg = "unterminated string literal (a string ends with ')"
	case strings.HasPrefix(rest, `"`):
		msg = `unterminated quoted identifier (a quoted name ends with ")`
	case strings.HasPrefix(rest, "/*"):
		msg = "unterminated comment (a block comment ends with */)"
	case rest != "":
		r := []rune(rest)[0]
		msg = fmt.Sprintf("unexpected character %q", r)
	default:
		msg = pe.Message()
	}
	return newError(src, pos, msg)
}

func asError(err error, target **Error) bool { return errors.As(err, target) }

var expectedRe = regexp.MustCompile(`^unexpected token "(.*)" \(expected (.*)\)$`)

// improve turns a participle error into an *Error whose message names what was
// found and what was expected, and, for a misspelled keyword, the keyword.
func improve(filename, src string, err error) error {
	var le *Error
	if asError(err, &le) {
		return le
	}
	var pe participle.Error
	if !errors.As(err, &pe) {
		return newError(src, lexer.Position{Filename: filename, Line: 1, Column: 1}, err.Error())
	}
	pos := pe.Position()
	if pos.Filename == "" {
		pos.Filename = filename
	}
	found, expected := describeFound(src, pos), ""
	if found == `"("` {
		if e := columnListError(filename, src, pos); e != nil {
			return improve(filename, src, e)
		}
	}
	var candidates, set []string
	var ute *participle.UnexpectedTokenError
	if errors.As(err, &ute) {
		if m := expectedRe.FindStringSubmatch(ute.Message()); m != nil {
			set, _ = expectedSet(m[2])
			expected = joinOr(set)
			candidates = quotedWords(strings.Join(set, " "))
		}
	} else if msg := pe.Message(); !strings.HasPrefix(msg, "unexpected token") {
		// Not about a token: a number that does not fit its field, or a
		// participle message kept as it is.
		switch {
		case strings.Contains(msg, "value out of range"):
			msg = "number out of range"
		case strings.Contains(msg, "strconv."):
			msg = "invalid number"
		}
		// Participle points just before the token it failed to store.
		toks, _ := Tokens("", src)
		for _, t := range toks {
			if t.Pos.Offset >= pos.Offset && t.Kind != TokWhitespace && t.Kind != TokComment {
				pos.Offset, pos.Line, pos.Column = t.Pos.Offset, t.Pos.Line, t.Pos.Column
				break
			}
		}
		return newError(src, pos, strings.TrimPrefix(msg, "lexer: "))
	}
	switch {
	case atStatementStart(src, pos):
		expected = "a statement"
		candidates = statementWords
	case expected == "":
		// The statement is complete and more follows: only a separator fits.
		expected = `";"`
	case len(set) == 1 && quotedWordRe.MatchString(set[0]):
		// Participle names only the last of several alternatives that failed
		// on the same token (CREATE MODEL|STREAM|TABLE|SINK, NOT IN|LIKE|...).
		if alts := probeAlternatives(filename, src, pos); len(alts) > 1 && len(alts) <= 6 {
			candidates = alts
			quoted := make([]string, len(alts))
			for i, a := range alts {
				quoted[i] = fmt.Sprintf("%q", a)
			}
			expected = joinOr(quoted)
		}
	}
	if expected == `")"` && commaFits(filename, src, pos) {
		// Participle backs out of a list element it cannot finish, so a
		// missing "," reads as a missing ")".
		expected = `"," or ")"`
	}
	if fix, at, ok := repair(filename, src, pos); ok {
		return newError(src, at.Pos, fmt.Sprintf("unexpected %q, expected %q", at.Value, fix))
	}
	msg := "unexpected " + found
	if expected != "" {
		msg += ", expected " + expected
	}
	if word := tokenAt(src, pos); word != "" {
		if kw := nearestKeyword(word, candidates); kw != "" && len(candidates) > 0 {
			msg += fmt.Sprintf(" (did you mean %q?)", kw)
		}
	}
	return newError(src, pos, msg)
}

// statementWords start statements.
var statementWords = []string{"CREATE", "DESCRIBE", "DROP", "EXPLAIN", "INSERT", "SELECT", "SET", "SHOW", "STOP"}

// atStatementStart reports whether pos is the first token of a statement.
func atStatementStart(src string, pos lexer.Position) bool {
	toks, _ := Tokens("", src)
	prev := ""
	for _, t := range toks {
		if t.Pos.Offset >= pos.Offset {
			break
		}
		if t.Kind != TokWhitespace && t.Kind != TokComment {
			prev = t.Value
		}
	}
	return prev == "" || prev == ";"
}

// probeAlternatives returns the terminals that, put at pos, let the parse of
// the text before pos go on past them.
func probeAlternatives(filename, src string, pos lexer.Position) []string {
	if pos.Offset < 0 || pos.Offset > len(src) {
		return nil
	}
	// Only the statement being parsed matters: start after the last ";".
	// The hidden alternatives are the words the grammar puts right after the
	// previous keyword (CREATE -> MODEL, STREAM, ...; NOT -> BETWEEN, IN, ...).
	start, prev := 0, ""
	toks, _ := Tokens("", src)
	for _, t := range toks {
		if t.Pos.Offset >= pos.Offset {
			break
		}
		if t.Kind == TokWhitespace || t.Kind == TokComment {
			continue
		}
		prev = strings.ToUpper(t.Value)
		if t.Kind == TokOperator && t.Value == ";" {
			start = t.Pos.Offset + 1
		}
	}
	if prev == "" || !quotedWordRe.MatchString(`"`+prev+`"`) {
		return nil
	}
	followRe := regexp.MustCompile(`"` + regexp.QuoteMeta(prev) + `"[?*]? \(?"([A-Za-z_]+)"`)
	var terms []string
	seen := map[string]bool{}
	for _, m := range followRe.FindAllStringSubmatch(Grammar(), -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			terms = append(terms, m[1])
		}
	}
	sort.Strings(terms)
	prefix := src[start:pos.Offset]
	var out []string
	for _, term := range terms {
		// Spaces keep the term one token ("10" + "." would lex as "10.").
		probe := prefix + " " + term + " "
		_, err := parse(filename, probe)
		var pe participle.Error
		var le *Error
		switch {
		case err == nil:
		case errors.As(err, &le):
			continue
		case errors.As(err, &pe) && pe.Position().Offset > len(prefix)+len(term):
		default:
			continue
		}
		out = append(out, term)
		if len(out) > 6 {
			break
		}
	}
	return out
}

// describeFound names the token at pos: its text, or "end of input".
func describeFound(src string, pos lexer.Position) string {
	toks, _ := Tokens("", src)
	for _, t := range toks {
		if t.Pos.Offset == pos.Offset && t.Kind != TokWhitespace && t.Kind != TokComment {
			return fmt.Sprintf("%q", t.Value)
		}
	}
	return "end of input"
}

// tokenAt returns the word (identifier or keyword) at pos, if any.
func tokenAt(src string, pos lexer.Position) string {
	toks, _ := Tokens("", src)
	for _, t := range toks {
		if t.Pos.Offset == pos.Offset && (t.Kind == TokIdent || t.Kind == TokKeyword) {
			return t.Value
		}
	}
	return ""
}

var quotedWordRe = regexp.MustCompile(`"([A-Za-z_]+)"`)

func quotedWords(s string) []string {
	var out []string
	for _, m := range quotedWordRe.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// Suggest is the candidate closest to word when it is a likely typo of it
// (case aside), as written among candidates, else "": the "did you mean"
// of names the grammar does not know (settings, functions).
func Suggest(word string, candidates []string) string {
	kw := nearestKeyword(word, candidates)
	for _, c := range candidates {
		if kw != "" && strings.EqualFold(c, kw) {
			return c
		}
	}
	return ""
}

// nearestKeyword returns the keyword among candidates (all keywords when there
// are none) closest to word, if it is close enough to be a misspelling.
func nearestKeyword(word string, candidates []string) string {
	if len(candidates) == 0 {
		candidates = Keywords()
	}
	w := strings.ToUpper(word)
	best, bestD := "", 1<<30
	for _, c := range candidates {
		c = strings.ToUpper(c)
		if c == w {
			return ""
		}
		if d := editDistance(w, c); d < bestD {
			best, bestD = c, d
		}
	}
	limit := 1
	if len(w) > 4 {
		limit = 2
	}
	if bestD <= limit && bestD < len(w) {
		return best
	}
	return ""
}

// commaFits reports whether inserting "," before pos lets the parse get past
// pos.
func commaFits(filename, src string, pos lexer.Position) bool {
	if pos.Offset < 0 || pos.Offset >= len(src) {
		return false
	}
	_, err := parse(filename, src[:pos.Offset]+", "+src[pos.Offset:])
	var pe participle.Error
	return err == nil || errors.As(err, &pe) && pe.Position().Offset > pos.Offset+2
}

// nearKeywords returns the keywords close enough to word to be a misspelling
// of it, closest first.
func nearKeywords(word string) []string {
	w := strings.ToUpper(word)
	limit := 1
	if len(w) > 4 {
		limit = 2
	}
	type cand struct {
		kw string
		d  int
	}
	var cs []cand
	for _, k := range Keywords() {
		if d := editDistance(w, k); d <= limit && d < len(w) && d > 0 {
			cs = append(cs, cand{k, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.kw
	}
	return out
}

// repair looks for a misspelled keyword just before the error that the parser
// took for a name ("SELECT a FORM t" reads FORM as an alias of a). It replaces
// each nearby identifier that is close to a keyword by that keyword and keeps
// the first replacement with which the parse gets further.
func repair(filename, src string, errPos lexer.Position) (string, Token, bool) {
	toks, err := Tokens(filename, src)
	if err != nil {
		return "", Token{}, false
	}
	var words []Token
	for _, t := range toks {
		if t.Pos.Offset > errPos.Offset {
			break
		}
		if t.Kind != TokWhitespace && t.Kind != TokComment {
			words = append(words, t)
		}
	}
	tried := 0
	for i := len(words) - 1; i >= 0 && i >= len(words)-4 && tried <= 8; i-- {
		t := words[i]
		if t.Kind != TokIdent || IsKeyword(t.Value) {
			continue
		}
		for _, kw := range nearKeywords(t.Value) {
			if tried++; tried > 8 {
				break
			}
			fixed := src[:t.Pos.Offset] + kw + src[t.Pos.Offset+len(t.Value):]
			_, err := parse(filename, fixed)
			if err == nil {
				return kw, t, true
			}
			var pe participle.Error
			if errors.As(err, &pe) && pe.Position().Offset-(len(kw)-len(t.Value)) > errPos.Offset {
				return kw, t, true
			}
		}
	}
	return "", Token{}, false
}

// IsKeyword reports whether word (any case) is a keyword, reserved or not.
func IsKeyword(word string) bool {
	w := strings.ToUpper(word)
	for _, k := range Keywords() {
		if k == w {
			return true
		}
	}
	return false
}

// editDistance is the optimal string alignment distance: insertions, deletions,
// substitutions and transpositions of adjacent letters (FORM -> FROM is 1).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 30
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := 0; j <= len(b); j++ {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// columnList is a parenthesised column list on its own. The list of CREATE
// TABLE and CREATE STREAM is optional, and participle backs out of a broken
// one within its lookahead and blames the "(" (expected FROM); parsing the
// list alone finds the token that broke it.
type columnList struct {
	Columns []*ColumnDef `parser:"'(' @@ ( ',' @@ )* ')'"`
}

// Built on first use, as scriptParser is.
var columnListParser = sync.OnceValue(func() *participle.Parser[columnList] {
	return participle.MustBuild[columnList](
		participle.Lexer(sqlLexer),
		participle.Elide(TokComment, TokWhitespace),
		participle.CaseInsensitive(TokKeyword, TokIdent),
		participle.UseLookahead(lookahead),
	)
})

var createNameRe = regexp.MustCompile(`(?is)\bCREATE\s+(TABLE|STREAM)\s+(IF\s+NOT\s+EXISTS\s+)?("[^"]*"|\w+)\s*$`)

// columnListError is the error of the column list that starts at pos after
// CREATE TABLE|STREAM name, or nil when there is none or it parses.
func columnListError(filename, src string, pos lexer.Position) error {
	if pos.Offset > len(src) || !createNameRe.MatchString(src[:pos.Offset]) {
		return nil
	}
	// Blank what comes before, keeping line breaks, so positions stay true.
	blank := []byte(src[:pos.Offset])
	for i, c := range blank {
		if c != '\n' {
			blank[i] = ' '
		}
	}
	_, err := columnListParser().ParseString(filename, string(blank)+src[pos.Offset:], participle.AllowTrailing(true))
	var pe participle.Error
	if err == nil || !errors.As(err, &pe) || pe.Position().Offset <= pos.Offset {
		return nil
	}
	return err
}
