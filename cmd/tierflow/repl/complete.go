package repl

import (
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"github.com/tierflow/tierflow/lang"
)

// completer completes keywords, the session's catalog names (models,
// streams, tables, sinks), their column names, functions, settings and
// backslash commands with their arguments. It implements
// readline.AutoCompleter.
type completer struct{ s *Session }

// Do returns the suffixes that complete the word before pos, and the length
// of that word.
func (c *completer) Do(line []rune, pos int) ([][]rune, int) {
	cands, word := c.candidates(string(line[:pos]))
	out := make([][]rune, 0, len(cands))
	for _, cand := range cands {
		out = append(out, []rune(cand[len(word):]+" "))
	}
	return out, len([]rune(word))
}

// candidates returns the completions of the last word of before (each
// starting with that word), and the word.
func (c *completer) candidates(before string) ([]string, string) {
	trimmed := strings.TrimLeft(before, " \t")
	if strings.HasPrefix(trimmed, `\`) {
		cmd, arg, hasArg := strings.Cut(trimmed, " ")
		if !hasArg {
			var names []string
			for _, k := range commands() {
				names = append(names, k.name)
			}
			return matching(names, cmd, false), cmd
		}
		arg = strings.TrimLeft(arg, " ")
		switch cmd {
		case `\d`:
			return matching(c.objectNames(), arg, false), arg
		case `\df`:
			return matching(c.functionNames(), arg, true), arg
		case `\format`:
			return matching(Formats(), arg, false), arg
		case `\timing`:
			return matching([]string{"on", "off"}, arg, false), arg
		case `\i`, `\o`:
			paths, _ := filepath.Glob(arg + "*")
			return paths, arg
		}
		return nil, arg
	}
	i := len(before)
	for i > 0 {
		r := rune(before[i-1])
		if !(r == '_' || r == '.' || r > unicode.MaxASCII || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			break
		}
		i--
	}
	word := before[i:]
	if word == "" {
		return nil, ""
	}
	var out []string
	if strings.HasPrefix(strings.ToLower(word), "planner.") {
		return matching(Settings(), word, true), word
	}
	// After FROM, JOIN, INTO, LATERAL or DESCRIBE only one kind of name fits.
	if fields := strings.Fields(before[:i]); len(fields) > 0 {
		switch strings.ToUpper(fields[len(fields)-1]) {
		case "FROM", "JOIN":
			return matching(c.sourceNames(), word, false), word
		case "INTO":
			return matching(c.sinkNames(), word, false), word
		case "LATERAL":
			return matching(c.modelNames(), word, false), word
		case "DESCRIBE":
			return matching(c.objectNames(), word, false), word
		}
	}
	lower := strings.ToLower(word) == word
	for _, k := range lang.Keywords() {
		if lower {
			k = strings.ToLower(k)
		}
		out = append(out, k)
	}
	out = append(out, c.objectNames()...)
	out = append(out, c.columnNames()...)
	out = append(out, c.functionNames()...)
	return matching(out, word, false), word
}

func (c *completer) objectNames() []string {
	cat := c.s.cat
	var names []string
	for _, m := range cat.Models {
		names = append(names, m.Name)
	}
	for _, x := range cat.Streams {
		names = append(names, x.Name)
	}
	for _, x := range cat.Tables {
		names = append(names, x.Name)
	}
	for _, x := range cat.Sinks {
		names = append(names, x.Name)
	}
	return names
}

func (c *completer) sourceNames() []string {
	var names []string
	for _, x := range c.s.cat.Streams {
		names = append(names, x.Name)
	}
	for _, x := range c.s.cat.Tables {
		names = append(names, x.Name)
	}
	return names
}

func (c *completer) sinkNames() []string {
	var names []string
	for _, x := range c.s.cat.Sinks {
		names = append(names, x.Name)
	}
	return names
}

func (c *completer) modelNames() []string {
	var names []string
	for _, m := range c.s.cat.Models {
		names = append(names, m.Name)
	}
	return names
}

func (c *completer) columnNames() []string {
	cat := c.s.cat
	var names []string
	for _, x := range cat.Streams {
		for _, col := range x.Columns {
			names = append(names, col.Name)
		}
	}
	for _, x := range cat.Tables {
		for _, col := range x.Columns {
			names = append(names, col.Name)
		}
	}
	for _, m := range cat.Models {
		for _, col := range m.Outputs {
			names = append(names, col.Name)
		}
	}
	return names
}

func (c *completer) functionNames() []string {
	var names []string
	for _, f := range c.s.funcs.Functions() {
		if f.Listed() {
			names = append(names, strings.ToLower(f.Name))
		}
	}
	return names
}

// matching keeps the distinct candidates that start with prefix, sorted.
// Names are matched as written; foldCase matches regardless of case.
func matching(cands []string, prefix string, foldCase bool) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range cands {
		ok := strings.HasPrefix(c, prefix)
		if foldCase && !ok && strings.HasPrefix(strings.ToLower(c), strings.ToLower(prefix)) {
			c, ok = prefix+c[len(prefix):], true
		}
		if ok && !seen[c] && c != "" {
			seen[c] = true
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}
