package lang

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// lookahead lets the parser back out of a branch after up to this many tokens
// (`t.*` against `t.col` needs 2). Keep it small: participle reports an error
// deeper than lookahead tokens into a branch, and backs out of shallower ones,
// so a larger value makes messages point at the start of the broken clause.
const lookahead = 2

// maxDepth bounds nesting (parentheses, brackets, CASE, runs of prefix NOT and
// minus). The parser recurses per level, and an input of a million "(" must
// get an error, not a stack overflow.
const maxDepth = 200

// MaxTokens bounds a script's tokens (whitespace and comments not counted).
// The parser's cost is linear but large, about 30µs a token on a 2-core
// machine (participle walks the grammar's precedence levels by reflection
// for each operand), and a script is parsed on the coordinator and on each
// worker: under the 1 MiB script cap a flat a+a+... of 500,000 terms would
// take over a minute of a core each time. 65,536 tokens is about 2 s; the
// largest script shipped is about 600 tokens, a TPC-H query under 1,000, an
// IN list of 30,000 values fits.
const MaxTokens = 1 << 16

func buildParser() *participle.Parser[Script] {
	return participle.MustBuild[Script](
		participle.Lexer(sqlLexer),
		participle.Elide(TokComment, TokWhitespace),
		participle.CaseInsensitive(TokKeyword, TokIdent),
		participle.UseLookahead(lookahead),
		participle.Union[Statement](
			&Query{}, &Insert{}, &Explain{},
			&CreateModel{}, &CreateStream{}, &CreateTable{}, &CreateView{}, &CreateSink{},
			&Drop{}, &Show{}, &Describe{}, &Set{}, &StopQuery{},
		),
		participle.Union[Expr](&orExpr{}),
		participle.Union[Literal](&NumberLit{}, &StringLit{}, &BoolLit{}, &NullLit{}),
		participle.Union[Objective](
			&AccuracyObjective{}, &ThroughputObjective{}, &LatencyObjective{},
			&BudgetObjective{}, &PriorityObjective{},
		),
	)
}

// The parser is immutable once built and safe for concurrent use. It is
// built on first use, not at init: building it is 20-60 ms of CPU, paid by
// every process that links lang (each test binary, each worker and NATS
// child a test starts) whether or not it parses anything.
var scriptParser = sync.OnceValue(buildParser)

// Prepare builds the parsers now. A long-running process that will parse
// (a worker, the coordinator) calls it as it starts, in the background, so
// that its first query does not wait for the build: lazily, a worker's
// first deploy took 20-60 ms longer than the rest (#25's small query alone
// measured a p99 of 65-86 ms against 24-35).
func Prepare() {
	scriptParser()
	columnListParser()
}

// Grammar returns the grammar in EBNF, as participle derives it from the AST.
func Grammar() string { return scriptParser().String() }

// Parse parses a script of statements separated by ";". filename is used in
// positions and errors only. A syntax error is a *Error wrapping ErrSyntax.
func Parse(filename, src string) (*Script, error) {
	s, err := parse(filename, src)
	if err != nil {
		return nil, improve(filename, src, err)
	}
	return s, nil
}

// parse is Parse without the error improvements (the repair search calls it).
func parse(filename, src string) (s *Script, err error) {
	defer func() {
		// Never a panic: a participle bug must come back as a syntax error.
		if r := recover(); r != nil {
			s, err = nil, newError(src, lexer.Position{Filename: filename, Line: 1, Column: 1},
				fmt.Sprintf("internal parser error: %v", r))
		}
	}()
	toks, err := tokens(filename, src, MaxTokens)
	if err != nil {
		return nil, err
	}
	if err := checkDepth(src, toks); err != nil {
		return nil, err
	}
	s, err = scriptParser().ParseString(filename, src)
	if err != nil {
		return nil, err
	}
	if s.Pos.Filename == "" && s.Pos.Line == 0 {
		s.Pos = lexer.Position{Filename: filename, Line: 1, Column: 1}
	}
	normalize(reflect.ValueOf(s))
	attachComments(s, toks)
	setKeyPositions(s, toks)
	return s, nil
}

// setKeyPositions gives every SET the position of its setting's name: the
// first token after SET that is neither space nor a comment. The tokens
// are in source order, so each SET's are found by a binary search, not a
// scan from the start (a long script may hold many SETs).
func setKeyPositions(s *Script, toks []Token) {
	for _, st := range s.Statements {
		set, ok := st.(*Set)
		if !ok {
			continue
		}
		set.KeyPos = set.Pos
		i := sort.Search(len(toks), func(i int) bool { return toks[i].Pos.Offset > set.Pos.Offset })
		for _, t := range toks[i:] {
			if t.Kind != TokWhitespace && t.Kind != TokComment {
				set.KeyPos = t.Pos
				break
			}
		}
	}
}

// attachComments gives every comment to the statement it precedes or sits in,
// or, when it follows a statement's ";" on the same line, to that line.
func attachComments(s *Script, toks []Token) {
	n := len(s.Statements)
	s.Comments, s.LineComments, s.Trailing = nil, nil, nil
	k := 0         // statements started so far
	ended := true  // a ";" closed statement k-1
	semiLine := -1 // line of that ";" while only comments and ";" follow it
	for _, t := range toks {
		for k < n && s.Statements[k].Position().Offset <= t.Pos.Offset {
			k++
			ended, semiLine = false, -1
		}
		switch {
		case t.Kind == TokWhitespace:
		case t.Kind == TokOperator && t.Value == ";":
			if !ended {
				semiLine = t.Pos.Line
			}
			ended = true
		case t.Kind == TokComment:
			text := strings.TrimRight(t.Value, " \t\r")
			if k > 0 && ended && t.Pos.Line == semiLine {
				if s.LineComments == nil {
					s.LineComments = make([]string, n)
				}
				if s.LineComments[k-1] != "" {
					text = s.LineComments[k-1] + " " + text
				}
				s.LineComments[k-1] = text
				continue
			}
			at := k - 1
			if ended || k == 0 {
				at = k
			}
			if at >= n {
				s.Trailing = append(s.Trailing, text)
				continue
			}
			if s.Comments == nil {
				s.Comments = make([][]string, n)
			}
			s.Comments[at] = append(s.Comments[at], text)
		default:
			semiLine = -1
		}
	}
}

// ParseStatement parses src as exactly one statement (a trailing ";" is
// allowed).
func ParseStatement(filename, src string) (Statement, error) {
	s, err := Parse(filename, src)
	if err != nil {
		return nil, err
	}
	if len(s.Statements) != 1 {
		return nil, newError(src, s.Pos, fmt.Sprintf("expected one statement, found %d", len(s.Statements)))
	}
	return s.Statements[0], nil
}

// ParseExpr parses a single expression (for tests and tools; statements use
// Parse).
func ParseExpr(filename, src string) (Expr, error) {
	const prefix = "SELECT "
	s, err := Parse(filename, prefix+src)
	if err != nil {
		var pe *Error
		if errors.As(err, &pe) {
			p := pe.Pos
			if p.Line == 1 {
				p.Column = max(1, p.Column-len(prefix))
			}
			p.Offset = max(0, p.Offset-len(prefix))
			return nil, newError(src, p, pe.Msg)
		}
		return nil, err
	}
	if len(s.Statements) == 1 {
		if q, ok := s.Statements[0].(*Query); ok && len(q.UnionAll) == 0 && q.OrderBy == nil &&
			q.Limit == nil && q.Objectives == nil && len(q.Select.Items) == 1 {
			sel, it := q.Select, q.Select.Items[0]
			if !sel.Distinct && sel.From == nil && sel.Where == nil && sel.GroupBy == nil &&
				sel.Having == nil && it.Expr != nil && it.Alias == "" {
				walkPositions(reflect.ValueOf(it.Expr), func(p *lexer.Position) {
					if p.Line == 1 {
						p.Column -= len(prefix)
					}
					p.Offset -= len(prefix)
				})
				return it.Expr, nil
			}
		}
	}
	return nil, newError(src, lexer.Position{Filename: filename, Line: 1, Column: 1}, "expected exactly one expression")
}

// checkDepth rejects inputs nested deeper than maxDepth before the recursive
// descent sees them.
func checkDepth(src string, toks []Token) error {
	depth, run := 0, 0
	for _, t := range toks {
		switch t.Kind {
		case TokComment, TokWhitespace:
			continue
		}
		v := strings.ToUpper(t.Value)
		switch {
		case v == "(" || v == "[" || v == "CASE" && t.Kind == TokKeyword:
			depth++
			run = 0
		case v == ")" || v == "]" || v == "END" && t.Kind == TokKeyword:
			if depth > 0 {
				depth--
			}
			run = 0
		case v == "NOT" && t.Kind == TokKeyword || v == "-":
			run++
		default:
			run = 0
		}
		if depth+run > maxDepth {
			return newError(src, t.Pos, fmt.Sprintf("expression nested too deeply (more than %d levels)", maxDepth))
		}
	}
	return nil
}

var (
	exprType     = reflect.TypeOf((*Expr)(nil)).Elem()
	positionType = reflect.TypeOf(lexer.Position{})
)

// normalize finishes a fresh parse tree in place: it lowers the grammar levels
// of every expression into public nodes and unquotes names and
// string literals (a doubled quote inside becomes one). Every node is visited exactly once, so a
// value is never unquoted twice. Raw token text of any other kind never starts
// with a quote, which is how a string field is known to be quoted.
func normalize(v reflect.Value) {
	switch v.Kind() {
	case reflect.Ptr:
		if !v.IsNil() {
			normalize(v.Elem())
		}
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		if g, ok := v.Interface().(grammarExpr); ok && v.Type() == exprType && v.CanSet() {
			v.Set(reflect.ValueOf(g.lower()))
		}
		normalize(v.Elem())
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			normalize(v.Index(i))
		}
	case reflect.Struct:
		if v.Type() == positionType {
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); f.CanSet() {
				normalize(f)
			}
		}
	case reflect.String:
		if s := v.String(); v.CanSet() && s != "" && (s[0] == '"' || s[0] == '\'') {
			v.SetString(unquote(s))
		}
	}
}

// unquote strips the quotes of a '...' or "..." token and undoubles the inner
// quote character.
func unquote(s string) string {
	if len(s) < 2 {
		return s
	}
	q := s[:1]
	return strings.ReplaceAll(s[1:len(s)-1], q+q, q)
}

// walkPositions calls fn on every position in the tree under v.
func walkPositions(v reflect.Value, fn func(*lexer.Position)) {
	switch v.Kind() {
	case reflect.Ptr, reflect.Interface:
		if !v.IsNil() {
			walkPositions(v.Elem(), fn)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			walkPositions(v.Index(i), fn)
		}
	case reflect.Struct:
		if v.Type() == positionType {
			if v.CanAddr() {
				fn(v.Addr().Interface().(*lexer.Position))
			}
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				walkPositions(v.Field(i), fn)
			}
		}
	}
}

// ClearPositions zeroes every position under n, so that two trees parsed from
// differently formatted sources compare equal with reflect.DeepEqual.
func ClearPositions(n Node) {
	walkPositions(reflect.ValueOf(n), func(p *lexer.Position) { *p = lexer.Position{} })
}
