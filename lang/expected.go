package lang

import (
	"sort"
	"strings"
	"sync"
)

// Participle reports what it expected as the EBNF of the rest of the failed
// sequence ("BY" Expr ("," Expr)*). Users need the set of tokens that could
// come next instead ("BY"), so this file computes FIRST sets over the grammar's
// own EBNF (the same text as testdata/grammar.ebnf).

// summaries stand for a whole production in messages instead of its many first
// tokens.
var summaries = map[string]string{
	"Statement":      "a statement",
	"Expr":           "an expression",
	"OrExpr":         "an expression",
	"AndExpr":        "an expression",
	"NotExpr":        "an expression",
	"Predicate":      "an expression",
	"Additive":       "an expression",
	"Multiplicative": "an expression",
	"Unary":          "an expression",
	"Postfix":        "an expression",
	"Primary":        "an expression",
	"Literal":        "a literal (number, string, TRUE, FALSE, NULL)",
	"NumberLit":      "a number",
	"Objective":      "an objective (ACCURACY, THROUGHPUT, LATENCY, BUDGET, PRIORITY)",
	"Type":           "a type (BOOLEAN, INT, BIGINT, FLOAT, DOUBLE, VARCHAR, BLOB, TIMESTAMP, TENSOR)",
}

var tokenWords = map[string]string{
	"<ident>":   "a name",
	"<qident>":  "a name",
	"<int>":     "an integer",
	"<float>":   "a number",
	"<string>":  "a string",
	"<keyword>": "a keyword",
}

// ebnfNode is a parsed EBNF expression.
type ebnfNode struct {
	kind  byte // 't' terminal, 'n' nonterminal, 's' sequence, 'a' alternatives
	text  string
	kids  []*ebnfNode
	maybe bool // ? or *
}

type ebnfParser struct {
	toks []string
	i    int
}

func tokenizeEBNF(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			out = append(out, s[i:min(j+1, len(s))])
			i = j + 1
		case c == '<':
			j := strings.IndexByte(s[i:], '>')
			if j < 0 {
				j = len(s) - i - 1
			}
			out = append(out, s[i:i+j+1])
			i += j + 1
		case strings.ContainsRune("()|?*+.=", rune(c)):
			out = append(out, string(c))
			i++
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n\"<()|?*+.=", rune(s[j])) {
				j++
			}
			out = append(out, s[i:j])
			i = j
		}
	}
	return out
}

func (p *ebnfParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *ebnfParser) alts() *ebnfNode {
	n := &ebnfNode{kind: 'a'}
	for {
		n.kids = append(n.kids, p.seq())
		if p.peek() != "|" {
			break
		}
		p.i++
	}
	return n
}

func (p *ebnfParser) seq() *ebnfNode {
	n := &ebnfNode{kind: 's'}
	for {
		t := p.peek()
		var x *ebnfNode
		switch {
		case t == "" || t == "|" || t == ")" || t == ".":
			return n
		case t == "(":
			p.i++
			x = p.alts()
			if p.peek() == ")" {
				p.i++
			}
		case t[0] == '"' || t[0] == '<':
			p.i++
			x = &ebnfNode{kind: 't', text: t}
		default:
			p.i++
			x = &ebnfNode{kind: 'n', text: t}
		}
		switch p.peek() {
		case "?", "*":
			p.i++
			x = &ebnfNode{kind: 's', kids: []*ebnfNode{x}, maybe: true}
		case "+":
			p.i++
		}
		n.kids = append(n.kids, x)
	}
}

var productions = sync.OnceValue(func() map[string]*ebnfNode {
	out := map[string]*ebnfNode{}
	for _, line := range strings.Split(Grammar(), "\n") {
		name, rhs, ok := strings.Cut(line, " = ")
		if !ok {
			continue
		}
		p := &ebnfParser{toks: tokenizeEBNF(strings.TrimSuffix(rhs, " ."))}
		out[name] = p.alts()
	}
	return out
})

// first adds to set the words for the tokens n can start with and reports
// whether n can match nothing.
func first(n *ebnfNode, set map[string]bool, seen map[string]bool) (nullable bool) {
	switch n.kind {
	case 't':
		if w, ok := tokenWords[n.text]; ok {
			set[w] = true
		} else {
			set[n.text] = true
		}
		return false
	case 'n':
		if s, ok := summaries[n.text]; ok {
			set[s] = true
			return false
		}
		prod, ok := productions()[n.text]
		if !ok || seen[n.text] {
			return false
		}
		seen[n.text] = true
		defer delete(seen, n.text)
		return first(prod, set, seen)
	case 'a':
		for _, k := range n.kids {
			if first(k, set, seen) {
				nullable = true
			}
		}
		return nullable
	default: // sequence
		for _, k := range n.kids {
			if !first(k, set, seen) {
				return n.maybe
			}
		}
		return true
	}
}

// expectedSet turns participle's EBNF remainder into the list of what may come
// next, and whether the remainder may also be empty.
func expectedSet(ebnf string) ([]string, bool) {
	p := &ebnfParser{toks: tokenizeEBNF(ebnf)}
	set := map[string]bool{}
	nullable := first(p.alts(), set, map[string]bool{})
	// A quoted name is a name.
	var out []string
	for w := range set {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool {
		// Keywords and punctuation first, then descriptions.
		qi, qj := strings.HasPrefix(out[i], `"`), strings.HasPrefix(out[j], `"`)
		if qi != qj {
			return qi
		}
		return out[i] < out[j]
	})
	return out, nullable
}

// joinOr writes a, b or c.
func joinOr(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
